// Dictation by the phone's own recogniser (bridge/PROTOCOL.md, "Dictation, for hosts"):
// the WebView has no working Web Speech API, so the page asks the app. The app says it
// can in its `hello` (`capabilities: {dictation: true}`: FirsttokenChat.kt); the page then
// sends `composer.dictate {on, locale}` when the person taps the microphone, and this
// streams back `composer.dictation {text, final}` from android.speech.SpeechRecognizer:
// partial results (the utterance so far), then the final one. Nothing is sent by
// dictation: the words land in the composer for the person to edit and send.
//
// Needs RECORD_AUDIO (asked at run time); without it, `error: "denied"`, which the page
// says once. Call from the main thread (SpeechRecognizer requires it).
//
// Unverified: no Android SDK on the machines that build firsttoken (not compiled here).

package dev.firsttoken.chat

import android.Manifest
import android.content.Context
import android.content.Intent
import android.content.pm.PackageManager
import android.os.Bundle
import android.speech.RecognitionListener
import android.speech.RecognizerIntent
import android.speech.SpeechRecognizer
import androidx.core.content.ContextCompat
import org.json.JSONObject

class Dictation(private val context: Context, private val post: (JSONObject) -> Unit) {
    companion object {
        /** Whether a recogniser exists here: said in the app's `hello`. */
        fun isAvailable(context: Context) = SpeechRecognizer.isRecognitionAvailable(context)
    }

    private var recognizer: SpeechRecognizer? = null

    /** `composer.dictate` from the page. */
    fun handle(event: JSONObject) {
        if (event.optBoolean("on")) start(event.optString("locale")) else recognizer?.stopListening()
    }

    private fun start(locale: String) {
        if (ContextCompat.checkSelfPermission(context, Manifest.permission.RECORD_AUDIO) != PackageManager.PERMISSION_GRANTED) {
            // The app asks for it where it shows its own UI; refused so far.
            return fail("denied")
        }
        recognizer?.destroy()
        val r = SpeechRecognizer.createSpeechRecognizer(context)
        recognizer = r
        r.setRecognitionListener(object : RecognitionListener {
            override fun onPartialResults(results: Bundle) = emit(results, final = false)
            override fun onResults(results: Bundle) {
                emit(results, final = true)
                finish()
            }
            override fun onError(error: Int) {
                // Silence is no failure: the page's button simply comes up again.
                val code = when (error) {
                    SpeechRecognizer.ERROR_INSUFFICIENT_PERMISSIONS -> "denied"
                    SpeechRecognizer.ERROR_NO_MATCH, SpeechRecognizer.ERROR_SPEECH_TIMEOUT -> null
                    SpeechRecognizer.ERROR_LANGUAGE_NOT_SUPPORTED, SpeechRecognizer.ERROR_LANGUAGE_UNAVAILABLE,
                    SpeechRecognizer.ERROR_NETWORK -> "unavailable"
                    else -> "failed"
                }
                finish()
                if (code != null) post(JSONObject().put("type", "composer.dictation").put("error", code))
                else post(JSONObject().put("type", "composer.dictation").put("text", "").put("final", true).put("listening", false))
            }
            override fun onReadyForSpeech(params: Bundle?) {}
            override fun onBeginningOfSpeech() {}
            override fun onRmsChanged(rmsdB: Float) {}
            override fun onBufferReceived(buffer: ByteArray?) {}
            override fun onEndOfSpeech() {}
            override fun onEvent(eventType: Int, params: Bundle?) {}
        })
        val intent = Intent(RecognizerIntent.ACTION_RECOGNIZE_SPEECH)
            .putExtra(RecognizerIntent.EXTRA_LANGUAGE_MODEL, RecognizerIntent.LANGUAGE_MODEL_FREE_FORM)
            .putExtra(RecognizerIntent.EXTRA_PARTIAL_RESULTS, true)
        // The page's locale, a BCP 47 tag (`zh-CN`): the interface's language.
        if (locale.isNotEmpty()) intent.putExtra(RecognizerIntent.EXTRA_LANGUAGE, locale)
        r.startListening(intent)
    }

    // Each result is the whole utterance so far, as the page expects.
    private fun emit(results: Bundle, final: Boolean) {
        val text = results.getStringArrayList(SpeechRecognizer.RESULTS_RECOGNITION)?.firstOrNull() ?: return
        post(JSONObject().put("type", "composer.dictation").put("text", text).put("final", final).put("listening", !final))
    }

    private fun fail(code: String) {
        post(JSONObject().put("type", "composer.dictation").put("error", code))
    }

    private fun finish() {
        recognizer?.destroy()
        recognizer = null
    }
}
