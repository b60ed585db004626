// What each reply is doing, from the protocol events about it, for a native status line:
// "Thinking…" from the send until the first answer text, with the newest reasoning as
// a preview while a reasoning model streams it; "Thought for 12 s" once the answer
// begins (bridge/PROTOCOL.md, "Reasoning, for hosts"). The page shows its own replies
// itself; this is for the app's: a chat it sent (a share intent's summary), a widget,
// an ongoing notification, TalkBack's announcement, or the page's chats observed
// (`page:<id>`).
//
// Use (with FirsttokenChat):
//
//   val status = ReplyStatus { id, reply -> statusView.text = reply.label() ?: "" }
//   val chat = FirsttokenChat(context) { event -> status.observe(event); watch.observe(event) }
//   chat.setThinking(FirsttokenChat.Thinking.HIGH)      // the Thinking level (settings.set)
//   chat.send(JSONObject().put("type", "chat.send").put("id", "1").put("messages", messages))
//   status.sent("1")                                    // "Thinking…" at once, before any byte
//
// Unverified: no Android SDK on the machines that build firsttoken (../README.md). The
// events it reads are tested through the GTK host (tests/webkit/test_host_reasoning.py).

package dev.firsttoken.chat

import android.os.SystemClock
import org.json.JSONObject

/** One reply's state; `label()` is the line to show beside it. */
data class Reply(
    val phase: Phase = Phase.THINKING,
    val startedMs: Long = SystemClock.elapsedRealtime(),
    /** The reasoning so far (empty for a model that hides it, or a plain model). */
    val reasoning: String = "",
    /** How long it thought, in ms: from the send to the first answer text (or the end). */
    val thoughtForMs: Long? = null,
    /** `chat.error`'s code (`aborted`, `network`, `timeout`, …) when FAILED. */
    val errorCode: String? = null,
) {
    enum class Phase {
        /** Sent; nothing of the answer yet (reasoning may be streaming). */
        THINKING,
        /** The answer is streaming. */
        ANSWERING,
        DONE,
        /** The output limit went on thinking and no answer came: send it again with a larger `max_tokens`. */
        CUT_WHILE_THINKING,
        FAILED,
    }

    /** A one-line status; null once there is an answer to read. */
    fun label(nowMs: Long = SystemClock.elapsedRealtime()): String? = when (phase) {
        Phase.THINKING -> "Thinking… ${(nowMs - startedMs) / 1000} s"
        Phase.ANSWERING, Phase.DONE ->
            if (thoughtForMs != null && reasoning.isNotEmpty()) "Thought for ${maxOf(1, (thoughtForMs + 500) / 1000)} s" else null
        Phase.CUT_WHILE_THINKING -> "The model spent its whole budget thinking"
        Phase.FAILED -> null
    }

    /** The newest reasoning, one line, for a preview under "Thinking…". */
    fun preview(): String = reasoning.lines().lastOrNull { it.isNotBlank() }.orEmpty().takeLast(80)
}

/** `onChange` is called on the thread `observe` is (the main thread with FirsttokenChat);
 * a label that counts seconds needs a 1 s tick as well. */
class ReplyStatus(private val onChange: (id: String, reply: Reply) -> Unit) {
    private val replies = mutableMapOf<String, Reply>() // request id → its reply

    operator fun get(id: String): Reply? = replies[id]

    /** The app sent `chat.send` with this id: "Thinking…" from now, before any byte. */
    fun sent(id: String) = update(id) { it }

    /** Feed every protocol event the page sends. */
    fun observe(event: JSONObject) {
        val id = event.optString("id").ifEmpty { return }
        when (event.optString("type")) {
            "chat.prepared" -> update(id) { it } // a page chat observed starts here
            "chat.delta" -> update(id) { reply ->
                val withReasoning = reply.copy(reasoning = reply.reasoning + event.optString("reasoning"))
                if (event.optString("text").isNotEmpty() && reply.phase == Reply.Phase.THINKING) {
                    withReasoning.copy(phase = Reply.Phase.ANSWERING, thoughtForMs = SystemClock.elapsedRealtime() - reply.startedMs)
                } else withReasoning
            }
            "chat.done" -> update(id) { reply ->
                if (reply.phase != Reply.Phase.THINKING) reply.copy(phase = Reply.Phase.DONE)
                else reply.copy(
                    // Ended before any answer text: cut while thinking if the limit ended it.
                    phase = if (event.optString("finish_reason") == "length") Reply.Phase.CUT_WHILE_THINKING else Reply.Phase.DONE,
                    thoughtForMs = SystemClock.elapsedRealtime() - reply.startedMs,
                )
            }
            "chat.error" -> update(id) { reply ->
                reply.copy(phase = Reply.Phase.FAILED, errorCode = event.optJSONObject("error")?.optString("code") ?: "error")
            }
        }
    }

    /** Forget a reply the app no longer shows. */
    fun remove(id: String) {
        replies.remove(id)
    }

    private fun update(id: String, change: (Reply) -> Reply) {
        val reply = change(replies[id] ?: Reply())
        replies[id] = reply
        onChange(id, reply)
    }
}
