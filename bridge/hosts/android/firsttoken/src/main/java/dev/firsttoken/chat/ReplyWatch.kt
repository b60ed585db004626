// "Reply ready" while the app is in the background: the answer goes on on the firsttoken
// gateway (README, "Resumable streams"), so the app polls its status with native
// networking while Android has paused the WebView, and posts a notification once it
// ended. Back in the foreground, the page takes the answer up from where it painted;
// send `chat.reconnect` from onResume too, as the page's own `resume` may not fire.
//
// Use (with FirsttokenChat):
//
//   val watch = ReplyWatch(context, apiKey)
//   FirsttokenChat(context) { event -> watch.observe(event); … }
//   // onStop:   watch.startPolling(scope)      onStart: watch.stop()
//
// `chat.stream` carries `status_url` and `client` (the x-firsttoken-client id the stream
// belongs to). A coroutine in the app's scope runs while the process lives; for longer
// answers, enqueue a WorkManager job that calls `pollOnce()`. Posting needs the
// POST_NOTIFICATIONS permission on Android 13+.
//
// Unverified: no Android SDK on the machines that build firsttoken (../README.md).

package dev.firsttoken.chat

import android.content.Context
import androidx.core.app.NotificationCompat
import androidx.core.app.NotificationManagerCompat
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.delay
import kotlinx.coroutines.isActive
import kotlinx.coroutines.launch
import org.json.JSONObject
import java.net.HttpURLConnection
import java.net.URL

class ReplyWatch(private val context: Context, private val apiKey: String?) {
    private data class Stream(val statusUrl: String, val client: String)

    private val streams = java.util.concurrent.ConcurrentHashMap<String, Stream>() // request id → its stream
    private var job: Job? = null

    /** Feed every protocol event the page sends. */
    fun observe(event: JSONObject) {
        val id = event.optString("id").ifEmpty { return }
        when (event.optString("type")) {
            "chat.stream" -> streams[id] = Stream(event.optString("status_url"), event.optString("client"))
            "chat.done", "chat.error" -> streams.remove(id)
        }
    }

    fun startPolling(scope: CoroutineScope, everyMs: Long = 5_000) {
        if (streams.isEmpty()) return
        job = scope.launch(Dispatchers.IO) {
            while (isActive && streams.isNotEmpty()) {
                pollOnce()
                delay(everyMs)
            }
        }
    }

    fun stop() {
        job?.cancel()
        job = null
    }

    /** One look at every stream still on its way; a notification for each that ended. */
    fun pollOnce() {
        for ((id, stream) in streams) {
            val connection = URL(stream.statusUrl).openConnection() as HttpURLConnection
            try {
                connection.setRequestProperty("x-firsttoken-client", stream.client)
                apiKey?.let { connection.setRequestProperty("Authorization", "Bearer $it") }
                if (connection.responseCode != 200) continue
                val status = JSONObject(connection.inputStream.bufferedReader().readText()).optString("status")
                if (status == "in_progress") continue
                streams.remove(id)
                val notification = NotificationCompat.Builder(context, "firsttoken.replies")
                    .setSmallIcon(android.R.drawable.stat_notify_chat)
                    .setContentTitle(if (status == "completed") "Reply ready" else "The reply stopped")
                    .setContentText("Open the chat to read it.")
                    .setAutoCancel(true)
                    .build()
                try {
                    NotificationManagerCompat.from(context).notify(id.hashCode(), notification)
                } catch (_: SecurityException) { /* no notification permission: the chat shows it on return */ }
            } catch (_: java.io.IOException) {
                // Offline: the next look tries again.
            } finally {
                connection.disconnect()
            }
        }
    }
}
