import Foundation
import HeraldCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A secret the embedded default keeps in a file of its data directory (the admin token, the key that
/// seals APNs secrets): made once, never replaced.
///
/// The file is written whole to a private temporary file (`O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600)
/// and published with `link(2)`, which fails if the name exists: no other user can read it at any
/// moment, a process starting at the same time reads the finished file or none, and an existing one is
/// never overwritten. A file that exists but cannot be read, is a symbolic link, or does not hold a
/// valid secret stops the start with a message naming it: replacing it would lose what it protects
/// (every sealed APNs key, for the secret key).
enum SecretFile {
    /// The secret in `path`, or a new one from `make` written there; `created` when this call made it.
    /// `isValid` says whether a file's text (trimmed) is a secret of the expected form.
    static func loadOrCreate(
        _ path: String,
        describing what: String,
        isValid: (String) -> Bool,
        make: () -> String
    ) throws -> (secret: String, created: Bool) {
        let directory = (path as NSString).deletingLastPathComponent
        try makeDirectory(directory)
        if let existing = try readSecret(path, describing: what) {
            guard isValid(existing) else {
                throw ConfigurationError("\(path) exists but does not hold a valid \(what); it is left as it is (fix or remove it)")
            }
            return (existing, false)
        }
        let secret = make()
        let temporary = path + ".\(getpid()).\(Hex.encode(SecureRandom.bytes(6))).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw ConfigurationError("cannot create \(temporary): \(String(cString: strerror(errno)))") }
        defer { unlink(temporary) }
        let bytes = Array((secret + "\n").utf8)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor)
        close(descriptor)
        guard written == bytes.count, synced == 0 else { throw ConfigurationError("cannot write \(temporary)") }
        if link(temporary, path) == 0 { return (secret, true) }
        let failure = errno
        // Another process published its secret first: use that one.
        if failure == EEXIST, let existing = try readSecret(path, describing: what), isValid(existing) { return (existing, false) }
        throw ConfigurationError("cannot write the \(what) to \(path): \(String(cString: strerror(failure)))")
    }

    /// The file's text, trimmed; `nil` when there is no such file.
    private static func readSecret(_ path: String, describing what: String) throws -> String? {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else {
            let failure = errno
            if failure == ENOENT { return nil }
            throw ConfigurationError(
                "cannot read the \(what) in \(path) (\(String(cString: strerror(failure)))); it is not replaced, since that would lose what it protects"
            )
        }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { break }
            guard count > 0 else {
                throw ConfigurationError("cannot read the \(what) in \(path) (\(String(cString: strerror(errno))))")
            }
            bytes += buffer.prefix(count)
        }
        return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Makes the data directory private to its owner, creating it if need be. As root the embedded
    /// cluster runs as another user, who must pass through to its own `postgres/` directory, so there
    /// it may be entered but not listed (0711); the secrets themselves are 0600 either way. A directory
    /// another user owns is left as it is.
    private static func makeDirectory(_ directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let attributes = try FileManager.default.attributesOfItem(atPath: directory)
        guard (attributes[.ownerAccountID] as? NSNumber)?.uint32Value == geteuid() else { return }
        let mode: mode_t = geteuid() == 0 ? 0o711 : 0o700
        if (attributes[.posixPermissions] as? NSNumber)?.uint16Value != UInt16(mode) { chmod(directory, mode) }
    }
}
