// The API key lives in the Keychain and is handed to the page in memory only
// (`settings.set`); the page never stores it (bridge/PROTOCOL.md, "Hosts").
//
// Unverified: no Apple SDK on the machines that build firsttoken; see ../README.md.

import Foundation
import Security

enum Keychain {
    /// The generic password stored under `service`/`account`, or nil.
    static func apiKey(service: String = "dev.firsttoken.chat", account: String = "api-key") -> String? {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
            kSecReturnData as String: true,
            kSecMatchLimit as String: kSecMatchLimitOne,
        ]
        var item: CFTypeRef?
        guard SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess,
              let data = item as? Data else { return nil }
        return String(data: data, encoding: .utf8)
    }

    /// Store (or replace) the key; accessible only while the device is unlocked, never synced.
    @discardableResult
    static func setAPIKey(_ key: String, service: String = "dev.firsttoken.chat", account: String = "api-key") -> Bool {
        let base: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
        ]
        SecItemDelete(base as CFDictionary)
        var add = base
        add[kSecValueData as String] = Data(key.utf8)
        add[kSecAttrAccessible as String] = kSecAttrAccessibleWhenUnlockedThisDeviceOnly
        return SecItemAdd(add as CFDictionary, nil) == errSecSuccess
    }
}
