// Sharing into the chat (bridge/PROTOCOL.md, "Share, for hosts"): WebKit has no Web
// Share Target, so a share extension takes what another app shares (text, a link,
// photos) and the app forwards it to the page as `composer.share`, into a new
// conversation or a named one. The page puts it in the composer, photos shrunk as if
// picked, for the person to send; it answers `composer.shared` or an `error`
// (`unknown_conversation`: nothing changed).
//
// The extension (a Share Extension target, NSExtensionActivationRule for text, URLs and
// up to 20 images) cannot drive the app's web view: it writes the share to the App Group
// container and opens the app (`firsttoken://share`); the app reads it here and calls
// `forward(to:)`. Keep the whole message under the page's 8 MiB bound: photos go as
// JPEG, converted as attachPhoto does.
//
// Unverified: no Apple SDK on the machines that build firsttoken (not compiled here).

import UIKit

struct SharedItem: Codable {
    var text: String?
    var url: String?
    var images: [Data] = []
    /// "new", or a conversation's id the app remembers (a reply-ready notification's).
    var conversation: String = "new"
}

enum ShareInbox {
    static let appGroup = "group.dev.firsttoken.chat"
    private static var file: URL? {
        FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: appGroup)?
            .appendingPathComponent("share.json")
    }

    /// In the extension: keep the share for the app (one at a time: the newest wins).
    static func keep(_ item: SharedItem) throws {
        guard let file else { return }
        try JSONEncoder().encode(item).write(to: file, options: .atomic)
    }

    /// In the app, once the page is ready: the kept share, taken once.
    static func take() -> SharedItem? {
        guard let file, let data = try? Data(contentsOf: file) else { return nil }
        try? FileManager.default.removeItem(at: file)
        return try? JSONDecoder().decode(SharedItem.self, from: data)
    }
}

extension FirsttokenChat {
    /// Forward a share to the page as `composer.share`. Only http(s) links: the page
    /// refuses any other (a `javascript:` URL) and the share with it.
    func share(_ item: SharedItem, id: String = UUID().uuidString) {
        var message: [String: Any] = ["type": "composer.share", "id": id, "conversation": item.conversation]
        if let text = item.text, !text.isEmpty { message["text"] = text }
        if let url = item.url, let scheme = URL(string: url)?.scheme?.lowercased(), scheme == "https" || scheme == "http" {
            message["url"] = url
        }
        let images = item.images.prefix(20).compactMap { data -> [String: Any]? in
            guard let jpeg = UIImage(data: data)?.jpegData(compressionQuality: 0.85) else { return nil }
            return ["data": jpeg.base64EncodedString(), "type": "image/jpeg", "name": "shared.jpg"]
        }
        if !images.isEmpty { message["images"] = images }
        send(message)
    }
}
