import ChildProcess
import Foundation

/// Keys and certificates made fresh at test time with the `openssl` command: the mock APNs server's
/// TLS certificate (for 127.0.0.1), an APNs `.p8` signing key, and a `.p12` client certificate whose
/// subject `UID` is its topic, as Apple issues them.
public struct TestCredentials: Sendable {
    public let directory: String
    /// The server certificate (PEM); clients trust it as a root (`HERALD_APNS_CA_FILE`).
    public let serverCertificateFile: String
    public let serverKeyFile: String
    /// A P-256 private key in PKCS#8 PEM, like an Apple `.p8` file.
    public let signingKeyPEM: String
    public let keyID = "ABC123DEFG"
    public let teamID = "TEAM123456"
    /// A `.p12` holding a self-signed client certificate for `certificateTopic`, password `certificatePassword`.
    public let p12: [UInt8]
    public let certificatePassword = "p12-secret"
    public let certificateTopic = "com.example.herald.cert"
    /// The client certificate (PEM), which the mock trusts when checking client certificates.
    public let clientCertificateFile: String
    /// A certificate (and its key) for another host name, `apns.wrong.example`: a client that trusts it
    /// as a root must still refuse it from 127.0.0.1.
    public let wrongHostCertificateFile: String
    public let wrongHostKeyFile: String
    /// `signingKeyPEM` encrypted with a password (PKCS#8 `ENCRYPTED PRIVATE KEY`), which Apple never
    /// issues.
    public let encryptedSigningKeyPEM: String
    /// The `.p12` exported with the legacy algorithms (RC2, 3DES) of older Keychain exports, same password.
    public let legacyP12: [UInt8]

    /// Made once per test process.
    public static let shared: TestCredentials = {
        do { return try TestCredentials() } catch { fatalError("could not make test credentials: \(error)") }
    }()

    private init() throws {
        directory = NSTemporaryDirectory() + "herald-test-credentials-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // Made once per process (`shared`); the keys go when the process exits.
        atexit {
            let directory = NSTemporaryDirectory() + "herald-test-credentials-\(getpid())-"
            let parent = (directory as NSString).deletingLastPathComponent
            let prefix = (directory as NSString).lastPathComponent
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? [] where entry.hasPrefix(prefix) {
                try? FileManager.default.removeItem(atPath: parent + "/" + entry)
            }
        }
        serverCertificateFile = directory + "/server.pem"
        serverKeyFile = directory + "/server-key.pem"
        let signingKeyFile = directory + "/AuthKey.p8"
        clientCertificateFile = directory + "/client.pem"
        let clientKeyFile = directory + "/client-key.pem"
        let p12File = directory + "/client.p12"
        try Self.openssl(
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-keyout", serverKeyFile, "-out", serverCertificateFile, "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
            ],
            in: directory
        )
        try Self.openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", signingKeyFile], in: directory)
        try Self.openssl(
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-keyout", clientKeyFile, "-out", clientCertificateFile,
                "-subj", "/UID=com.example.herald.cert/CN=Apple Push Services: com.example.herald.cert",
            ],
            in: directory
        )
        try Self.openssl(
            [
                "pkcs12", "-export", "-inkey", clientKeyFile, "-in", clientCertificateFile, "-out", p12File,
                "-passout", "pass:p12-secret",
            ],
            in: directory
        )
        wrongHostCertificateFile = directory + "/wrong-host.pem"
        wrongHostKeyFile = directory + "/wrong-host-key.pem"
        try Self.openssl(
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-keyout", wrongHostKeyFile, "-out", wrongHostCertificateFile, "-subj", "/CN=apns.wrong.example",
                "-addext", "subjectAltName=DNS:apns.wrong.example",
            ],
            in: directory
        )
        let encryptedKeyFile = directory + "/AuthKey-encrypted.p8"
        try Self.openssl(
            ["pkcs8", "-topk8", "-in", signingKeyFile, "-out", encryptedKeyFile, "-v2", "aes-256-cbc", "-passout", "pass:key-secret"],
            in: directory
        )
        let legacyP12File = directory + "/client-legacy.p12"
        try Self.openssl(
            [
                "pkcs12", "-export", "-legacy", "-inkey", clientKeyFile, "-in", clientCertificateFile, "-out", legacyP12File,
                "-passout", "pass:p12-secret",
            ],
            in: directory
        )
        signingKeyPEM = try String(contentsOfFile: signingKeyFile, encoding: .utf8)
        encryptedSigningKeyPEM = try String(contentsOfFile: encryptedKeyFile, encoding: .utf8)
        p12 = Array(try Data(contentsOf: URL(fileURLWithPath: p12File)))
        legacyP12 = Array(try Data(contentsOf: URL(fileURLWithPath: legacyP12File)))
    }

    private static func openssl(_ arguments: [String], in directory: String) throws {
        let log = directory + "/openssl.log"
        let path = ["/usr/bin/openssl", "/usr/local/bin/openssl"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let path else { throw HeraldProcessError(message: "openssl not found (apt-get install openssl)") }
        let status = try ChildProcess.run([path] + arguments, environment: ["PATH=/usr/bin:/bin"], outputPath: log)
        guard status == 0 else {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw HeraldProcessError(message: "openssl \(arguments.first ?? "") failed: \(text)")
        }
    }
}
