// What each reply is doing, from the protocol events about it, for a native status line:
// "Thinking…" from the send until the first answer text, with the newest reasoning as
// a preview while a reasoning model streams it; "Thought for 12 s" once the answer
// begins (bridge/PROTOCOL.md, "Reasoning, for hosts"). The page shows its own replies
// itself; this is for the app's: a chat it sent (a share extension's summary), a
// widget, a Live Activity, VoiceOver's announcement, or the page's chats observed
// (`page:<id>`).
//
// Use (with FirsttokenChat):
//
//   let status = ReplyStatus()
//   status.onChange = { id, reply in label.text = reply.label }   // "Thinking…", "Thought for 4 s", nil
//   chat.onEvent = { event in status.observe(event); watch.observe(event); … }
//   chat.setThinking(.high)                       // the Thinking level (settings.set)
//   chat.send(["type": "chat.send", "id": "1", "messages": [["role": "user", "content": "Why?"]]])
//   status.sent("1")                              // "Thinking…" at once, before any byte
//
// Unverified: no Apple SDK on the machines that build firsttoken (../README.md). The
// events it reads are tested through the GTK host (tests/webkit/test_host_reasoning.py).

import Foundation

struct Reply: Equatable {
    enum Phase: Equatable {
        /// Sent; nothing of the answer yet (reasoning may be streaming: `reasoning`).
        case thinking
        /// The answer is streaming.
        case answering
        /// Ended: `chat.done`. `cutWhileThinking`: the output limit went on thinking and
        /// no answer came (send again with a larger `max_tokens`).
        case done(cutWhileThinking: Bool)
        /// Ended with `chat.error` (its code: `aborted`, `network`, `timeout`, …).
        case failed(code: String)
    }

    var phase: Phase = .thinking
    let started: Date
    /// The reasoning so far (empty for a model that hides it, or a plain model).
    var reasoning = ""
    /// How long it thought: from the send to the first answer text (or the end).
    var thoughtFor: TimeInterval?

    /// A one-line status to show beside the reply; nil once there is an answer to read.
    var label: String? {
        switch phase {
        case .thinking:
            return "Thinking… \(Int(Date().timeIntervalSince(started))) s"
        case .answering, .done(cutWhileThinking: false):
            guard let thoughtFor, !reasoning.isEmpty else { return nil }
            return "Thought for \(max(1, Int(thoughtFor.rounded()))) s"
        case .done(cutWhileThinking: true):
            return "The model spent its whole budget thinking"
        case .failed:
            return nil
        }
    }

    /// The newest reasoning, one line, for a preview under "Thinking…".
    var preview: String {
        let line = reasoning.split(whereSeparator: \.isNewline).last.map { String($0) } ?? ""
        return String(line.suffix(80))
    }
}

final class ReplyStatus {
    private(set) var replies: [String: Reply] = [:] // request id → its reply
    /// Called on every change, on the thread `observe` is called on (the main thread
    /// with FirsttokenChat). A label that counts seconds needs a 1 s timer as well.
    var onChange: ((String, Reply) -> Void)?

    /// The app sent `chat.send` with this id: "Thinking…" from now, before any byte.
    func sent(_ id: String) {
        update(id) { _ in }
    }

    /// Feed every protocol event the page sends.
    func observe(_ event: [String: Any]) {
        guard let id = event["id"] as? String, let type = event["type"] as? String else { return }
        switch type {
        case "chat.prepared":
            update(id) { _ in } // a page chat observed starts here
        case "chat.delta":
            let reasoning = event["reasoning"] as? String ?? ""
            let text = event["text"] as? String ?? ""
            update(id) { reply in
                reply.reasoning += reasoning
                if !text.isEmpty, reply.phase == .thinking {
                    reply.phase = .answering
                    reply.thoughtFor = Date().timeIntervalSince(reply.started)
                }
            }
        case "chat.done":
            update(id) { reply in
                let noAnswer = reply.phase == .thinking
                if noAnswer { reply.thoughtFor = Date().timeIntervalSince(reply.started) }
                reply.phase = .done(cutWhileThinking: noAnswer && event["finish_reason"] as? String == "length")
            }
        case "chat.error":
            let code = (event["error"] as? [String: Any])?["code"] as? String ?? "error"
            update(id) { $0.phase = .failed(code: code) }
        default:
            break
        }
    }

    /// Forget a reply the app no longer shows.
    func remove(_ id: String) { replies[id] = nil }

    private func update(_ id: String, _ change: (inout Reply) -> Void) {
        var reply = replies[id] ?? Reply(started: Date())
        change(&reply)
        replies[id] = reply
        onChange?(id, reply)
    }
}
