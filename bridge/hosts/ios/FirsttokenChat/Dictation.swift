// Dictation by the phone's own recogniser (bridge/PROTOCOL.md, "Dictation, for hosts"):
// iOS has no Web Speech API in WKWebView or standalone web apps, so the page asks the
// app. The app says it can in its `hello` (`capabilities: {dictation: true}`: see
// FirsttokenChat.swift); the page then sends `composer.dictate {on, locale}` when the
// person taps the microphone, and this streams back `composer.dictation {text, final}`:
// the utterance so far, provisional, then final. Nothing is sent by dictation; the words
// land in the composer for the person to edit and send.
//
// Needs NSSpeechRecognitionUsageDescription and NSMicrophoneUsageDescription in the
// app's Info.plist. A refusal of either is `error: "denied"`, which the page says once.
//
// Unverified: no Apple SDK on the machines that build firsttoken (not compiled here).

import AVFoundation
import Speech

final class Dictation {
    /// Posts a protocol message to the page (FirsttokenChat.send).
    private let post: ([String: Any]) -> Void
    private let audio = AVAudioEngine()
    private var request: SFSpeechAudioBufferRecognitionRequest?
    private var task: SFSpeechRecognitionTask?

    init(post: @escaping ([String: Any]) -> Void) {
        self.post = post
    }

    /// Whether a recogniser exists for the phone's language: said in the app's `hello`.
    static var isAvailable: Bool {
        SFSpeechRecognizer()?.isAvailable ?? false
    }

    /// `composer.dictate` from the page.
    func handle(_ event: [String: Any]) {
        if event["on"] as? Bool == true {
            start(locale: event["locale"] as? String ?? Locale.current.identifier)
        } else {
            // The recogniser finishes what it heard: its last result comes final.
            audio.stop()
            audio.inputNode.removeTap(onBus: 0)
            request?.endAudio()
        }
    }

    private func start(locale: String) {
        SFSpeechRecognizer.requestAuthorization { status in
            AVAudioSession.sharedInstance().requestRecordPermission { granted in
                DispatchQueue.main.async {
                    guard status == .authorized, granted else { return self.fail("denied") }
                    self.listen(locale: locale)
                }
            }
        }
    }

    private func listen(locale: String) {
        // The page's locale is a BCP 47 tag (`zh-CN`); Locale takes it as is.
        guard let recognizer = SFSpeechRecognizer(locale: Locale(identifier: locale)), recognizer.isAvailable else {
            return fail("unavailable")
        }
        task?.cancel()
        let request = SFSpeechAudioBufferRecognitionRequest()
        request.shouldReportPartialResults = true
        self.request = request
        do {
            let session = AVAudioSession.sharedInstance()
            try session.setCategory(.record, mode: .measurement, options: .duckOthers)
            try session.setActive(true, options: .notifyOthersOnDeactivation)
            let input = audio.inputNode
            input.installTap(onBus: 0, bufferSize: 1024, format: input.outputFormat(forBus: 0)) { buffer, _ in
                request.append(buffer)
            }
            audio.prepare()
            try audio.start()
        } catch {
            return fail("failed")
        }
        task = recognizer.recognitionTask(with: request) { [weak self] result, error in
            DispatchQueue.main.async {
                guard let self else { return }
                if let result {
                    // bestTranscription is the whole utterance so far, as the page expects.
                    self.post(["type": "composer.dictation", "text": result.bestTranscription.formattedString,
                               "final": result.isFinal, "listening": !result.isFinal])
                    if result.isFinal { self.finish() }
                } else if error != nil {
                    self.finish()
                    self.post(["type": "composer.dictation", "error": "failed"])
                }
            }
        }
    }

    private func fail(_ code: String) {
        finish()
        post(["type": "composer.dictation", "error": code])
    }

    private func finish() {
        if audio.isRunning {
            audio.stop()
            audio.inputNode.removeTap(onBus: 0)
        }
        request = nil
        task = nil
        try? AVAudioSession.sharedInstance().setActive(false, options: .notifyOthersOnDeactivation)
    }
}
