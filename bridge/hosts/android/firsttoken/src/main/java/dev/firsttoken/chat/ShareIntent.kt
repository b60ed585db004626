// Sharing into the chat (bridge/PROTOCOL.md, "Share, for hosts"): the app's activity
// takes ACTION_SEND / ACTION_SEND_MULTIPLE (an intent filter for text/plain and image/*)
// and forwards what was shared to the page as `composer.share`, into a new conversation
// or a named one. The page puts it in the composer, photos shrunk as if picked, for the
// person to send, and answers `composer.shared` or an `error` (`unknown_conversation`:
// nothing changed). (An installed web app gets the same from the manifest's Web Share
// Target; inside this app the intent is the way.)
//
//   <intent-filter>
//     <action android:name="android.intent.action.SEND" />
//     <action android:name="android.intent.action.SEND_MULTIPLE" />
//     <category android:name="android.intent.category.DEFAULT" />
//     <data android:mimeType="text/plain" />
//     <data android:mimeType="image/*" />
//   </intent-filter>
//
// Keep the whole message under the page's 8 MiB bound: photos go as JPEG, as
// attachPhoto sends them. Call off the main thread (reading and encoding photos).
//
// Unverified: no Android SDK on the machines that build firsttoken (not compiled here).

package dev.firsttoken.chat

import android.content.Intent
import android.graphics.BitmapFactory
import android.net.Uri
import android.util.Base64
import androidx.core.content.IntentCompat
import org.json.JSONArray
import org.json.JSONObject
import java.io.ByteArrayOutputStream

/** Forward a share intent to the page; `conversation`: "new", or an id the app knows. */
fun FirsttokenChat.share(intent: Intent, conversation: String = "new", id: String = java.util.UUID.randomUUID().toString()) {
    if (intent.action != Intent.ACTION_SEND && intent.action != Intent.ACTION_SEND_MULTIPLE) return
    val message = JSONObject().put("type", "composer.share").put("id", id).put("conversation", conversation)
    val text = intent.getStringExtra(Intent.EXTRA_TEXT).orEmpty()
    // A shared page usually comes as its link in EXTRA_TEXT: sent as `url` when it is one
    // (http(s) only: the page refuses any other, and the share with it), else as text.
    val link = Uri.parse(text.trim())
    if (link.scheme == "https" || link.scheme == "http") message.put("url", text.trim())
    else if (text.isNotBlank()) message.put("text", text)
    intent.getStringExtra(Intent.EXTRA_SUBJECT)?.takeIf { it.isNotBlank() && !message.has("text") }?.let { message.put("text", it) }
    val uris = if (intent.action == Intent.ACTION_SEND_MULTIPLE)
        IntentCompat.getParcelableArrayListExtra(intent, Intent.EXTRA_STREAM, Uri::class.java).orEmpty()
    else listOfNotNull(IntentCompat.getParcelableExtra(intent, Intent.EXTRA_STREAM, Uri::class.java))
    val images = JSONArray()
    for (uri in uris.take(20)) {
        val bytes = webView.context.contentResolver.openInputStream(uri)?.use { it.readBytes() } ?: continue
        val bitmap = BitmapFactory.decodeByteArray(bytes, 0, bytes.size) ?: continue
        val out = ByteArrayOutputStream()
        bitmap.compress(android.graphics.Bitmap.CompressFormat.JPEG, 85, out)
        images.put(JSONObject().put("data", Base64.encodeToString(out.toByteArray(), Base64.NO_WRAP))
            .put("type", "image/jpeg").put("name", "shared.jpg"))
    }
    if (images.length() > 0) message.put("images", images)
    webView.post { send(message) }
}
