import Foundation
import KeyVaultStore
import NIOSSL

/// HTTPS for `keyctl serve`: the certificate and key files are checked and loaded
/// before the server listens, so a bad path, a key that is open to other users or a
/// key that does not match the certificate stops it at start, naming the setting.
extension ServerConfiguration {
    static let tlsCertificateSetting = "--tls-cert (KEYVAULT_TLS_CERT)"
    static let tlsKeySetting = "--tls-key (KEYVAULT_TLS_KEY)"

    /// Whether the service speaks HTTPS.
    package var servesTLS: Bool { tlsCertificatePath != nil && tlsKeyPath != nil }

    /// Both files or neither; each a readable regular file; the key not open to others.
    ///
    /// - Throws: `ConfigurationError` naming the setting.
    func validateTLSFiles() throws {
        switch (tlsCertificatePath, tlsKeyPath) {
        case (nil, nil):
            return
        case (.some, nil):
            throw ConfigurationError("\(Self.tlsCertificateSetting) is set without \(Self.tlsKeySetting): give both for HTTPS, or neither for plain HTTP")
        case (nil, .some):
            throw ConfigurationError("\(Self.tlsKeySetting) is set without \(Self.tlsCertificateSetting): give both for HTTPS, or neither for plain HTTP")
        case (let certificate?, let key?):
            try Self.checkReadableFile(certificate, setting: Self.tlsCertificateSetting)
            try Self.checkReadableFile(key, setting: Self.tlsKeySetting)
            try Self.checkPrivate(key)
        }
    }

    /// The server's TLS configuration (TLS 1.2 or newer), or nil for plain HTTP.
    ///
    /// - Throws: `ConfigurationError` for a file that holds no PEM certificate or key, or
    ///   a key that does not belong to the certificate. The key's bytes are never quoted.
    func tlsConfiguration() throws -> TLSConfiguration? {
        try validateTLSFiles()
        guard let certificatePath = tlsCertificatePath, let keyPath = tlsKeyPath else { return nil }
        let chain = (try? NIOSSLCertificate.fromPEMFile(certificatePath)) ?? []
        guard !chain.isEmpty else {
            throw ConfigurationError("\(Self.tlsCertificateSetting): \(certificatePath) holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        guard let key = try? NIOSSLPrivateKey(file: keyPath, format: .pem) else {
            throw ConfigurationError("\(Self.tlsKeySetting): \(keyPath) holds no unencrypted PEM private key")
        }
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        tls.minimumTLSVersion = .tlsv12
        do {
            _ = try NIOSSLContext(configuration: tls)  // what the listener will make: checks that key and certificate match
        } catch {
            throw ConfigurationError("\(Self.tlsKeySetting): the key in \(keyPath) does not belong to the certificate in \(certificatePath)")
        }
        return tls
    }

    private static func checkReadableFile(_ path: String, setting: String) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ConfigurationError("\(setting): \(path) does not exist")
        }
        guard !isDirectory.boolValue, FileManager.default.isReadableFile(atPath: path) else {
            throw ConfigurationError("\(setting): \(path) is not a file this user can read")
        }
    }

    /// The key may be readable by its group (Debian's `ssl-cert` convention, mode 0640)
    /// but by no one else, and writable by its owner only: like ssh with its keys, the
    /// service refuses rather than serve with a key others could have read or swapped.
    private static func checkPrivate(_ path: String) throws {
        guard let mode = (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int else { return }
        guard mode & 0o037 == 0 else {
            throw ConfigurationError("\(tlsKeySetting): \(path) has mode \(String(mode & 0o777, radix: 8)), open to other users; chmod 600 (or 640 for a group such as ssl-cert) before serving with it")
        }
    }
}
