// A WebView hosting the firsttoken page, served from the app's assets with the headers
// `make bundle`'s manifest lists, and the protocol relayed through AndroidX WebKit's web
// message listener (bridge/PROTOCOL.md, "Hosts" and "Who is a host"):
//
//   page → app   window.firsttokenHost.postMessage(text), which addWebMessageListener
//                injects only into frames of ORIGIN; onPostMessage checks the frame too
//   app → page   the listener's JavaScriptReplyProxy, to the frame that spoke
//
// Why not postWebMessage and a WebMessagePort, as before: the port arrives in the page
// as a `message` event with a null `source`, which web content can produce too, so the
// page can no longer tell it from a hostile window's and no longer accepts it.
//
// Fallback, for a WebView without WEB_MESSAGE_LISTENER: the page calls
// `window.FirsttokenAndroid.postMessage(text)` and the app answers with
// `window.firsttoken.post(text)` through evaluateJavascript (main frame only). An
// `addJavascriptInterface` object is visible to every frame, so the app cannot tell
// which frame called it; the page frames no content of others.
//
// The bundle (build/bundle from `make bundle`) goes into src/main/assets/firsttoken/.
// WebViewAssetLoader serves it at https://appassets.androidplatform.net/firsttoken/, an
// https origin, so the page is a secure context (IndexedDB, Cache Storage, workers).
// Android WebView is never cross-origin isolated (COOP/COEP are ignored there), so the
// page runs without SharedArrayBuffer; it is built to (README, "Embedding").
//
// Unverified: no Android SDK on the machines that build firsttoken; see ../README.md.

package dev.firsttoken.chat

import android.annotation.SuppressLint
import android.app.PendingIntent
import android.content.Context
import android.content.Intent
import android.net.Uri
import android.os.Handler
import android.os.Looper
import android.view.View
import android.webkit.JavascriptInterface
import android.webkit.WebResourceRequest
import android.webkit.WebResourceResponse
import android.webkit.WebView
import android.webkit.WebViewClient
import androidx.core.app.NotificationCompat
import androidx.core.app.NotificationManagerCompat
import androidx.webkit.JavaScriptReplyProxy
import androidx.webkit.WebMessageCompat
import androidx.webkit.WebViewAssetLoader
import androidx.webkit.WebViewCompat
import androidx.webkit.WebViewFeature
import org.json.JSONObject
import java.io.IOException

class FirsttokenChat(context: Context, private val onEvent: (JSONObject) -> Unit) {
    companion object {
        const val ORIGIN = "https://appassets.androidplatform.net"
        const val INDEX = "$ORIGIN/firsttoken/index.html"
        private const val ASSETS = "firsttoken"
        /** The Intent extra a reply-ready notification's tap carries: the conversation id. */
        const val EXTRA_CONVERSATION = "dev.firsttoken.chat.CONVERSATION"
    }

    val webView = WebView(context)
    var isReady = false
        private set
    // The page's end of the listener, from its latest message (a reload makes a new one);
    // requests made before the page first spoke wait here, in order.
    private var reply: JavaScriptReplyProxy? = null
    private val pending = ArrayDeque<String>()
    private val listening = WebViewFeature.isFeatureSupported(WebViewFeature.WEB_MESSAGE_LISTENER)
    private val main = Handler(Looper.getMainLooper())
    private val manifest = loadManifest(context)
    /** Dictation by SpeechRecognizer, for the page's microphone (Dictation.kt). */
    private val dictation by lazy { Dictation(webView.context) { send(it) } }

    init {
        @SuppressLint("SetJavaScriptEnabled")
        webView.settings.javaScriptEnabled = true
        webView.settings.domStorageEnabled = true // IndexedDB and localStorage
        webView.settings.allowFileAccess = false
        webView.settings.allowContentAccess = false
        val loader = WebViewAssetLoader.Builder()
            .addPathHandler("/$ASSETS/", BundleHandler(context))
            .build()
        webView.webViewClient = object : WebViewClient() {
            override fun shouldInterceptRequest(view: WebView, request: WebResourceRequest): WebResourceResponse? =
                loader.shouldInterceptRequest(request.url)

            override fun onPageStarted(view: WebView, url: String, favicon: android.graphics.Bitmap?) {
                reply = null // the old document's end died with it
            }
        }
        if (listening) {
            // Added before the first load: the object is there from each document's start.
            WebViewCompat.addWebMessageListener(webView, "firsttokenHost", setOf(ORIGIN), Listener())
        } else {
            webView.addJavascriptInterface(FallbackBridge(), "FirsttokenAndroid")
        }
        webView.loadUrl(INDEX)
    }

    /** Send one protocol request (hello, ping, settings.set, connection.warm, chat.send, chat.abort, tokens.count). */
    fun send(message: JSONObject) {
        message.put("v", 1)
        val text = message.toString()
        if (!listening) {
            // JSONObject.quote makes the text a JS string literal: it is passed, never run.
            webView.evaluateJavascript("window.firsttoken.post(${JSONObject.quote(text)})", null)
            return
        }
        val r = reply
        if (r != null) r.postMessage(text) else pending.addLast(text)
    }

    /** The API dialect a chat speaks (bridge/PROTOCOL.md, "settings": `api`). */
    enum class Api(val wire: String) {
        CHAT_COMPLETIONS("chat_completions"),
        RESPONSES("responses"),
        ANTHROPIC_MESSAGES("anthropic_messages"),
    }

    /**
     * Settings for the page and the app's own chats; the key stays in the page's memory.
     * `api` null: the model decides (Claude models speak Anthropic Messages, the pro and
     * codex models Responses, others Chat Completions); a value set earlier is cleared.
     */
    fun configure(baseUrl: String, model: String, apiKey: String? = null, system: String? = null, api: Api? = null) {
        val settings = JSONObject().put("base_url", baseUrl).put("model", model)
        settings.put("api", api?.wire ?: JSONObject.NULL)
        if (apiKey != null) settings.put("api_key", apiKey) // e.g. from the Android Keystore
        if (system != null) settings.put("system", system)
        send(JSONObject().put("type", "settings.set").put("id", "settings").put("settings", settings))
        // Open the connection to that API now: the first Send then pays for no DNS, TCP or
        // TLS (PROTOCOL.md, `connection.warm`).
        send(JSONObject().put("type", "connection.warm").put("id", "warm"))
    }

    /** How hard a reasoning model thinks: the page's Thinking levels (bridge/PROTOCOL.md,
     * "Reasoning, for hosts"). AUTO: as the model does by default. */
    enum class Thinking(val wire: String) { AUTO("auto"), OFF("off"), LOW("low"), MEDIUM("medium"), HIGH("high") }

    /**
     * Set the Thinking level for the app's chats and, as their default, the page's (the
     * person's choice for a conversation in the composer wins there). `summary` false asks
     * reasoning models for no summary of their thinking: the answer may come up to 2 s
     * sooner, and the reply stays at "Thinking…" until it does. null clears either, back
     * to the page's own. A reasoning model's reply then streams `chat.delta`s with
     * `reasoning` (and empty `text`) before the answer's: ReplyStatus.kt shows them.
     */
    fun setThinking(level: Thinking?, summary: Boolean? = null) {
        val settings = JSONObject()
            .put("reasoning", level?.wire ?: JSONObject.NULL)
            .put("reasoning_summary", summary ?: JSONObject.NULL)
        send(JSONObject().put("type", "settings.set").put("id", "thinking").put("settings", settings))
    }

    /**
     * Put a photo the app has (a share intent's, its own camera's) in the composer, for
     * the person to ask about (PROTOCOL.md, `composer.attach`); the page shrinks it to
     * what the model keeps and answers `composer.attached` or an `error`. A HEIF photo
     * (many Android cameras write them) is decoded here and sent as JPEG: the WebView
     * does not decode HEIF. Call it off the main thread for a large photo.
     */
    fun attachPhoto(bytes: ByteArray, name: String = "photo.jpg", id: String = java.util.UUID.randomUUID().toString()) {
        var data = bytes
        var type = webType(bytes)
        if (type == null) {
            val bitmap = android.graphics.BitmapFactory.decodeByteArray(bytes, 0, bytes.size) ?: return
            val out = java.io.ByteArrayOutputStream()
            bitmap.compress(android.graphics.Bitmap.CompressFormat.JPEG, 90, out)
            data = out.toByteArray()
            type = "image/jpeg"
        }
        val image = JSONObject().put("data", android.util.Base64.encodeToString(data, android.util.Base64.NO_WRAP))
            .put("type", type).put("name", name)
        send(JSONObject().put("type", "composer.attach").put("id", id).put("image", image))
    }

    /** The media type of a file every WebView decodes (JPEG, PNG, GIF, WebP), by its first bytes. */
    private fun webType(b: ByteArray): String? {
        fun at(i: Int, vararg v: Int) = b.size >= i + v.size && v.indices.all { (b[i + it].toInt() and 0xFF) == v[it] }
        return when {
            at(0, 0xFF, 0xD8, 0xFF) -> "image/jpeg"
            at(0, 0x89, 0x50, 0x4E, 0x47) -> "image/png"
            at(0, 0x47, 0x49, 0x46, 0x38) -> "image/gif"
            at(0, 0x52, 0x49, 0x46, 0x46) && at(8, 0x57, 0x45, 0x42, 0x50) -> "image/webp"
            else -> null
        }
    }

    /** Warm-up: keep the view attached but invisible until the chat is shown. */
    fun hideWhileWarming() {
        webView.visibility = View.INVISIBLE
    }

    fun show() {
        webView.visibility = View.VISIBLE
    }

    private inner class Listener : WebViewCompat.WebMessageListener {
        override fun onPostMessage(view: WebView, message: WebMessageCompat, sourceOrigin: Uri,
                                   isMainFrame: Boolean, replyProxy: JavaScriptReplyProxy) {
            // Only the page itself: its main frame, from the bundle's origin.
            if (!isMainFrame || sourceOrigin.toString() != ORIGIN) return
            reply = replyProxy
            while (pending.isNotEmpty()) replyProxy.postMessage(pending.removeFirst())
            deliver(message.data)
        }
    }

    private fun deliver(text: String?) {
        val event = try { JSONObject(text ?: return) } catch (e: Exception) { return }
        if (event.optString("type") == "ready") {
            isReady = true
            // Say what the app can do for the page: its own speech recogniser (Dictation.kt;
            // PROTOCOL.md, "Dictation, for hosts"). The page answers with `ready` again under
            // this id; a reloaded page's `ready` has none, so it is said again.
            if (event.optString("id") != "capabilities") {
                val capabilities = JSONObject().put("dictation", Dictation.isAvailable(webView.context))
                send(JSONObject().put("type", "hello").put("id", "capabilities").put("capabilities", capabilities))
            }
        }
        // The page's microphone: the app's recogniser listens, or stops (not compiled here).
        if (event.optString("type") == "composer.dictate") {
            dictation.handle(event)
            return
        }
        // The page's haptics (bridge/PROTOCOL.md, "Haptics, for hosts"), paced by the
        // page; the app's own switch: settings.set {"haptics": false}. (Not compiled here.)
        if (event.optString("type") == "haptic") {
            webView.performHapticFeedback(
                if (event.optString("kind") == "error") android.view.HapticFeedbackConstants.REJECT
                else android.view.HapticFeedbackConstants.CLOCK_TICK,
            )
            return
        }
        // The screen kept on while the page's answer streams ("Screen awake, for hosts").
        if (event.optString("type") == "screen.awake") {
            webView.keepScreenOn = event.optBoolean("on")
            return
        }
        // reply.ready: an answer done while the page was hidden (the app in the background;
        // the page sends it only then): a local notification. The event still goes on to
        // the app.
        if (event.optString("type") == "reply.ready") notifyReplyReady(event)
        onEvent(event)
    }

    // One notification per conversation (a later answer replaces it: same tag and id), on
    // ReplyWatch's channel ("firsttoken.replies", which the app creates). Its tap starts
    // the app's launcher activity with EXTRA_CONVERSATION, to hand to openConversation().
    // Needs POST_NOTIFICATIONS on Android 13+. (Not compiled here.)
    private fun notifyReplyReady(event: JSONObject) {
        val context = webView.context
        val conversation = event.optJSONObject("conversation")
        val id = conversation?.optString("id").orEmpty()
        val tap = context.packageManager.getLaunchIntentForPackage(context.packageName)
            ?.putExtra(EXTRA_CONVERSATION, id)
            ?.addFlags(Intent.FLAG_ACTIVITY_SINGLE_TOP)
            ?.let { PendingIntent.getActivity(context, id.hashCode(), it, PendingIntent.FLAG_IMMUTABLE or PendingIntent.FLAG_UPDATE_CURRENT) }
        val notification = NotificationCompat.Builder(context, "firsttoken.replies")
            .setSmallIcon(android.R.drawable.stat_notify_chat)
            .setContentTitle(conversation?.optString("title").orEmpty().ifEmpty { "Reply ready" })
            .setContentText(event.optString("text"))
            .setContentIntent(tap)
            .setAutoCancel(true)
            .build()
        try {
            NotificationManagerCompat.from(context).notify("firsttoken.reply", id.hashCode(), notification)
        } catch (_: SecurityException) { /* no notification permission: the chat shows the answer on return */ }
    }

    /** Open conversation `id` (a reply-ready notification's tap): the page opens the one its
     * URL fragment names, `#conversation=<id>` (bridge/PROTOCOL.md, "Reply ready, for
     * hosts"). The id goes in as a JSON string literal: passed, never run. */
    fun openConversation(id: String) {
        webView.evaluateJavascript("location.hash = 'conversation=' + encodeURIComponent(${JSONObject.quote(id)})", null)
    }

    private inner class FallbackBridge {
        @JavascriptInterface
        fun postMessage(text: String) {
            main.post { deliver(text) }
        }
    }

    // Serves only what the manifest names, with the headers it names for each file.
    private inner class BundleHandler(private val context: Context) : WebViewAssetLoader.PathHandler {
        override fun handle(path: String): WebResourceResponse? {
            val name = path.ifEmpty { "index.html" }
            val headers = manifest[name] ?: return null
            val stream = try { context.assets.open("$ASSETS/$name") } catch (e: IOException) { return null }
            val type = headers["content-type"] ?: "application/octet-stream"
            val mime = type.substringBefore(';').trim()
            val charset = type.substringAfter("charset=", "").ifEmpty { null }
            return WebResourceResponse(mime, charset, 200, "OK", headers, stream)
        }
    }

    private fun loadManifest(context: Context): Map<String, Map<String, String>> {
        val text = context.assets.open("$ASSETS/manifest.json").bufferedReader().use { it.readText() }
        val root = JSONObject(text)
        require(root.getInt("version") == 1) { "unknown bundle manifest version" }
        val files = root.getJSONObject("files")
        return files.keys().asSequence().associateWith { name ->
            val h = files.getJSONObject(name)
            h.keys().asSequence().associateWith { h.getString(it) }
        }
    }
}
