// "Reply ready" while the app is in the background: the answer goes on on the firsttoken
// gateway (README, "Resumable streams"), so the app can poll its status with native
// networking while iOS has suspended the WebView, and post a local notification once it
// ended. When the user comes back, the page takes the answer up from where it painted
// (`chat.reconnect` is sent by the page itself on `resume`; send it too from
// `sceneWillEnterForeground` if the app keeps the view alive).
//
// Use (with FirsttokenChat):
//
//   let watch = ReplyWatch()
//   chat.onEvent = { event in watch.observe(event); … }
//   // SceneDelegate.sceneDidEnterBackground:  watch.startPolling()
//   // SceneDelegate.sceneWillEnterForeground: watch.stop(); chat.send(["type": "chat.reconnect", "id": id])
//
// `chat.stream` carries what polling needs: `status_url` and `client` (the
// `x-firsttoken-client` id the stream belongs to); the API key comes from the Keychain,
// as for the page. A background task gives the app about 30 s; for longer answers,
// schedule a BGAppRefreshTask that calls `pollOnce` (iOS decides when it runs).
//
// Unverified: no Apple SDK on the machines that build firsttoken (../README.md).

import Foundation
import UIKit
import UserNotifications

final class ReplyWatch {
    private struct Stream { let statusURL: URL; let client: String }
    private var streams: [String: Stream] = [:] // request id → its stream
    private var task: UIBackgroundTaskIdentifier = .invalid
    private var timer: Timer?

    /// Feed every protocol event the page sends.
    func observe(_ event: [String: Any]) {
        guard let id = event["id"] as? String, let type = event["type"] as? String else { return }
        switch type {
        case "chat.stream":
            if let url = (event["status_url"] as? String).flatMap(URL.init(string:)), let client = event["client"] as? String {
                streams[id] = Stream(statusURL: url, client: client)
            }
        case "chat.done", "chat.error":
            streams[id] = nil
        default:
            break
        }
    }

    func startPolling(every seconds: TimeInterval = 5) {
        guard !streams.isEmpty else { return }
        task = UIApplication.shared.beginBackgroundTask(withName: "firsttoken.reply") { [weak self] in self?.stop() }
        timer = Timer.scheduledTimer(withTimeInterval: seconds, repeats: true) { [weak self] _ in self?.pollOnce() }
    }

    func stop() {
        timer?.invalidate()
        timer = nil
        if task != .invalid { UIApplication.shared.endBackgroundTask(task); task = .invalid }
    }

    /// One look at every stream still on its way; a notification for each that ended.
    func pollOnce() {
        for (id, stream) in streams {
            var request = URLRequest(url: stream.statusURL)
            request.setValue(stream.client, forHTTPHeaderField: "x-firsttoken-client")
            if let key = Keychain.apiKey() { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
            URLSession.shared.dataTask(with: request) { [weak self] data, response, _ in
                guard (response as? HTTPURLResponse)?.statusCode == 200, let data,
                      let status = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
                      let state = status["status"] as? String, state != "in_progress"
                else { return }
                DispatchQueue.main.async {
                    self?.streams[id] = nil
                    let content = UNMutableNotificationContent()
                    content.title = state == "completed" ? "Reply ready" : "The reply stopped"
                    content.body = "Open the chat to read it."
                    UNUserNotificationCenter.current().add(UNNotificationRequest(identifier: "firsttoken.\(id)", content: content, trigger: nil))
                    if self?.streams.isEmpty == true { self?.stop() }
                }
            }.resume()
        }
    }
}
