// Unverified: no Android SDK on the machines that build firsttoken (see ../README.md).
plugins {
    id("com.android.library")
    kotlin("android")
}

android {
    namespace = "dev.firsttoken.chat"
    compileSdk = 35
    defaultConfig { minSdk = 24 }
}

dependencies {
    implementation("androidx.webkit:webkit:1.12.1") // WebViewAssetLoader, addWebMessageListener
    implementation("androidx.core:core-ktx:1.13.1") // NotificationCompat (ReplyWatch)
    implementation("org.jetbrains.kotlinx:kotlinx-coroutines-android:1.8.1") // ReplyWatch's polling
}
