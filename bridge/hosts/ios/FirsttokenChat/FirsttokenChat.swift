// A WKWebView hosting the firsttoken page, with the protocol relayed both ways
// (bridge/PROTOCOL.md):
//
//   page → app   window.webkit.messageHandlers.firsttoken.postMessage(text)
//   app → page   window.firsttoken.post(text), called here with callAsyncJavaScript,
//                whose `arguments` pass the text as a value: no string is ever built
//                into script, so nothing the app relays can be evaluated.
//
// Use:
//
//   let chat = try FirsttokenChat(bundle: Bundle.main.url(forResource: "firsttoken", withExtension: nil)!)
//   chat.onEvent = { event in … }          // ready, chat.delta, chat.done, chat.error, notice, …
//   chat.configure(baseURL: "https://api.example.com/v1", model: "gpt-4o")
//   chat.configure(baseURL: "https://api.anthropic.com/v1", model: "claude-sonnet-4-5", api: .anthropicMessages)
//   chat.setThinking(.high)                // a reasoning model's Thinking level (PROTOCOL.md)
//   chat.send(["type": "chat.send", "id": "1", "messages": [["role": "user", "content": "Hi"]]])
//
// A reasoning model's reply: `chat.delta`s with `reasoning` (and empty `text`) come
// first, then the answer's; ReplyStatus.swift turns them into "Thinking…" and
// "Thought for N s" for the app's own status line.
//
// Warm-up (README "Warm-up in a WebView"): create it at app start with
// `FirsttokenChat.warmUp(in: window)`; it stays in the window, invisible, so WebKit does
// not suspend it, and Python is ready by the time the chat screen shows it.
//
// Unverified: no Apple SDK on the machines that build firsttoken; see ../README.md for
// what is tested instead (the same page-side API in WebKitGTK).

import UIKit
import UserNotifications
import WebKit

final class FirsttokenChat: NSObject, WKScriptMessageHandler {
    static let handlerName = "firsttoken"

    let webView: WKWebView
    /// Every protocol event the page sends, parsed. Called on the main thread.
    var onEvent: (([String: Any]) -> Void)?
    /// True once `ready` arrived (Python is up); messages sent earlier are queued by the page.
    private(set) var isReady = false
    /// Dictation by SFSpeechRecognizer, for the page's microphone (Dictation.swift).
    private lazy var dictation = Dictation(post: { [weak self] in self?.send($0) })

    init(bundle: URL) throws {
        let configuration = WKWebViewConfiguration()
        configuration.setURLSchemeHandler(try BundleSchemeHandler(root: bundle), forURLScheme: BundleSchemeHandler.scheme)
        let controller = WKUserContentController()
        configuration.userContentController = controller
        // The page focuses its input itself; a hidden, warming view shows no keyboard.
        configuration.preferences.javaScriptCanOpenWindowsAutomatically = false
        webView = WKWebView(frame: .zero, configuration: configuration)
        super.init()
        // WKUserContentController retains its handlers: a weak proxy avoids a cycle.
        controller.add(WeakHandler(self), name: Self.handlerName)
        webView.load(URLRequest(url: BundleSchemeHandler.index))
    }

    deinit {
        webView.configuration.userContentController.removeScriptMessageHandler(forName: Self.handlerName)
    }

    // MARK: page → app

    func userContentController(_ controller: WKUserContentController, didReceive message: WKScriptMessage) {
        // Only the page itself speaks for the page: its main frame, from the bundle's
        // origin; never a frame inside it, nor a document the view was navigated to
        // (bridge/PROTOCOL.md, "Who is a host").
        let origin = message.frameInfo.securityOrigin
        guard message.frameInfo.isMainFrame,
              origin.protocol == BundleSchemeHandler.index.scheme, origin.host == BundleSchemeHandler.index.host,
              let text = message.body as? String,
              let data = text.data(using: .utf8),
              let event = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
              event["type"] is String
        else { return }
        if event["type"] as? String == "ready" {
            isReady = true
            // Say what the app can do for the page: its own speech recogniser (Dictation.swift;
            // PROTOCOL.md, "Dictation, for hosts"). The page answers with `ready` again, under
            // this id; a reloaded page's `ready` has none, so it is said again.
            if event["id"] as? String != "capabilities" {
                send(["type": "hello", "id": "capabilities", "capabilities": ["dictation": Dictation.isAvailable]])
            }
        }
        // The page's microphone: the app's recogniser listens, or stops (not compiled here).
        if event["type"] as? String == "composer.dictate" {
            dictation.handle(event)
            return
        }
        // The page's haptics (bridge/PROTOCOL.md, "Haptics, for hosts"), paced by the
        // page; the app's own switch: settings.set {"haptics": false}. (Not compiled here.)
        if event["type"] as? String == "haptic" {
            if event["kind"] as? String == "error" {
                UINotificationFeedbackGenerator().notificationOccurred(.error)
            } else {
                UIImpactFeedbackGenerator(style: .light).impactOccurred()
            }
            return
        }
        // The screen kept on while the page's answer streams ("Screen awake, for hosts").
        if event["type"] as? String == "screen.awake" {
            UIApplication.shared.isIdleTimerDisabled = event["on"] as? Bool == true
            return
        }
        // reply.ready: an answer done while the page was hidden (the app in the background;
        // the page sends it only then). A local notification, one per conversation (a later
        // answer replaces it: same identifier); the app's UNUserNotificationCenterDelegate
        // passes `userInfo["conversation"]` to openConversation(_:) on its tap. Needs the
        // app's notification authorization. The event still goes on to the app. (Not
        // compiled here.)
        if event["type"] as? String == "reply.ready" {
            let conversation = event["conversation"] as? [String: Any]
            let id = conversation?["id"] as? String ?? ""
            let content = UNMutableNotificationContent()
            content.title = (conversation?["title"] as? String).flatMap { $0.isEmpty ? nil : $0 } ?? "Reply ready"
            content.body = event["text"] as? String ?? ""
            content.userInfo = ["conversation": id]
            content.threadIdentifier = "firsttoken.reply"
            UNUserNotificationCenter.current().add(
                UNNotificationRequest(identifier: "firsttoken.reply.\(id)", content: content, trigger: nil))
        }
        onEvent?(event)
    }

    // MARK: app → page

    /// Open conversation `id` (a reply-ready notification's tap): the page opens the one
    /// its URL fragment names, `#conversation=<id>` (bridge/PROTOCOL.md, "Reply ready, for
    /// hosts"). `id` is passed as an argument, never spliced into the script.
    func openConversation(_ id: String) {
        webView.callAsyncJavaScript("location.hash = 'conversation=' + encodeURIComponent(id)",
                                    arguments: ["id": id], in: nil, in: .page) { _ in }
    }

    /// Send one protocol message (a request: hello, ping, settings.set, chat.send,
    /// chat.abort, tokens.count). `v` is added.
    func send(_ message: [String: Any]) {
        var message = message
        message["v"] = 1
        guard JSONSerialization.isValidJSONObject(message),
              let data = try? JSONSerialization.data(withJSONObject: message),
              let text = String(data: data, encoding: .utf8)
        else { return }
        webView.callAsyncJavaScript("window.firsttoken.post(text)", arguments: ["text": text],
                                    in: nil, in: .page) { _ in }
    }

    /// The API dialect a chat speaks (bridge/PROTOCOL.md, "settings": `api`).
    enum API: String {
        case chatCompletions = "chat_completions"
        case responses = "responses"
        case anthropicMessages = "anthropic_messages"
    }

    /// Settings for the page and for the app's own chats. The key comes from the Keychain
    /// and stays in the page's memory only. `api` nil: the model decides (Claude models
    /// speak Anthropic Messages, the pro and codex models Responses, others Chat
    /// Completions); a value set earlier is cleared.
    func configure(baseURL: String, model: String, api: API? = nil, system: String? = nil) {
        var settings: [String: Any] = ["base_url": baseURL, "model": model]
        settings["api"] = api.map { $0.rawValue as Any } ?? NSNull()
        if let system { settings["system"] = system }
        if let key = Keychain.apiKey() { settings["api_key"] = key }
        send(["type": "settings.set", "id": "settings", "settings": settings])
        // Open the connection to that API now, while the person is still reading: the
        // first Send then pays for no DNS, TCP or TLS (PROTOCOL.md, `connection.warm`).
        send(["type": "connection.warm", "id": "warm"])
    }

    /// How hard a reasoning model thinks (bridge/PROTOCOL.md, "Reasoning, for hosts"):
    /// the page's Thinking levels. `auto`: as the model does by default.
    enum Thinking: String {
        case auto, off, low, medium, high
    }

    /// Set the Thinking level for the app's chats and, as their default, the page's (the
    /// person's choice for a conversation in the composer wins there). `summary` false
    /// asks reasoning models for no summary of their thinking: the answer may come up to
    /// 2 s sooner, and the reply stays at "Thinking…" until it does. nil clears either,
    /// back to the page's own.
    func setThinking(_ level: Thinking?, summary: Bool? = nil) {
        var settings: [String: Any] = ["reasoning": level.map { $0.rawValue as Any } ?? NSNull()]
        settings["reasoning_summary"] = summary.map { $0 as Any } ?? NSNull()
        send(["type": "settings.set", "id": "thinking", "settings": settings])
    }

    /// Put a photo the app has (the share sheet's, its own camera's) in the composer, for
    /// the person to ask about (PROTOCOL.md, `composer.attach`); the page shrinks it to
    /// what the model keeps and answers `composer.attached` or an `error`. iOS photos are
    /// HEIC, which no web engine here decodes: converted to JPEG first. The page's own
    /// shrink then re-encodes it, so the quality here only needs to be high, and the
    /// EXIF (GPS included) that survives this step is dropped there.
    func attachPhoto(_ data: Data, name: String = "photo.jpg", id: String = UUID().uuidString) {
        var bytes = data
        var type = "image/jpeg"
        if let mime = Self.webType(of: data) {
            type = mime
        } else {
            guard let image = UIImage(data: data), let jpeg = image.jpegData(compressionQuality: 0.9) else { return }
            bytes = jpeg
        }
        send(["type": "composer.attach", "id": id,
              "image": ["data": bytes.base64EncodedString(), "type": type, "name": name]])
    }

    /// The media type of a file every web engine decodes (JPEG, PNG, GIF, WebP), by its
    /// first bytes; nil for anything else (HEIC, TIFF, RAW): converted before it goes.
    private static func webType(of data: Data) -> String? {
        let b = [UInt8](data.prefix(12))
        if b.starts(with: [0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if b.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "image/png" }
        if b.starts(with: Array("GIF8".utf8)) { return "image/gif" }
        if b.count == 12, b.starts(with: Array("RIFF".utf8)), Array(b[8..<12]) == Array("WEBP".utf8) { return "image/webp" }
        return nil
    }

    // MARK: warm-up

    private static var warm: FirsttokenChat?

    /// Start the page early and keep it alive, invisible, behind the window's content.
    @discardableResult
    static func warmUp(in window: UIWindow, bundle: URL) throws -> FirsttokenChat {
        if let warm { return warm }
        let chat = try FirsttokenChat(bundle: bundle)
        chat.webView.alpha = 0
        chat.webView.isUserInteractionEnabled = false
        chat.webView.frame = window.bounds
        window.insertSubview(chat.webView, at: 0)
        warm = chat
        return chat
    }

    /// Take the warmed page to show it (its web view moves to `container`).
    static func take(into container: UIView) -> FirsttokenChat? {
        guard let chat = warm else { return nil }
        warm = nil
        chat.webView.removeFromSuperview()
        chat.webView.alpha = 1
        chat.webView.isUserInteractionEnabled = true
        chat.webView.frame = container.bounds
        chat.webView.autoresizingMask = [.flexibleWidth, .flexibleHeight]
        container.addSubview(chat.webView)
        return chat
    }
}

private final class WeakHandler: NSObject, WKScriptMessageHandler {
    weak var target: WKScriptMessageHandler?
    init(_ target: WKScriptMessageHandler) { self.target = target }
    func userContentController(_ controller: WKUserContentController, didReceive message: WKScriptMessage) {
        target?.userContentController(controller, didReceive: message)
    }
}
