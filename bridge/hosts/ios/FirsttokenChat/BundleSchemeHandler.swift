// Serves the folder `make bundle` writes (copied into the app as a folder reference,
// e.g. "firsttoken") at firsttoken://app/, with the headers its manifest.json lists for
// each file: the content type, COOP/COEP, the Content-Security-Policy and the snapshot's
// label. WKWebView applies response headers from a scheme handler, so the page keeps its
// CSP here exactly as when the gateway serves it.
//
// Only paths the manifest names are served: anything else is a 404, so a page can never
// read other files of the app through this scheme.
//
// Unverified: no Apple SDK on the machines that build firsttoken; see ../README.md.

import Foundation
import WebKit

final class BundleSchemeHandler: NSObject, WKURLSchemeHandler {
    static let scheme = "firsttoken"
    static let index = URL(string: "firsttoken://app/index.html")!

    private struct Manifest: Decodable {
        let version: Int
        let index: String
        let files: [String: [String: String]]
    }

    private let root: URL
    private let files: [String: [String: String]]

    init(root: URL) throws {
        self.root = root
        let data = try Data(contentsOf: root.appendingPathComponent("manifest.json"))
        let manifest = try JSONDecoder().decode(Manifest.self, from: data)
        guard manifest.version == 1 else {
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "manifest.json version \(manifest.version)"])
        }
        self.files = manifest.files
    }

    func webView(_ webView: WKWebView, start task: WKURLSchemeTask) {
        guard let url = task.request.url else { return }
        var path = url.path
        while path.hasPrefix("/") { path.removeFirst() }
        if path.isEmpty { path = "index.html" }
        guard let headers = files[path],
              // Mapped, not read: the interpreter snapshot is ~19 MB.
              let body = try? Data(contentsOf: root.appendingPathComponent(path), options: .alwaysMapped)
        else {
            let missing = HTTPURLResponse(url: url, statusCode: 404, httpVersion: "HTTP/1.1", headerFields: [:])!
            task.didReceive(missing)
            task.didFinish()
            return
        }
        var fields = headers
        fields["Content-Length"] = String(body.count)
        let response = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: fields)!
        task.didReceive(response)
        task.didReceive(body)
        task.didFinish()
    }

    func webView(_ webView: WKWebView, stop task: WKURLSchemeTask) {
        // Each answer is sent whole in start(); nothing is left to cancel.
    }
}
