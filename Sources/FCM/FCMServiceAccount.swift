import Foundation
import HeraldCrypto

/// A Google service account's key file, as the Firebase console downloads it: the project whose
/// messages are sent, the account that signs the OAuth assertion, its key, and the token endpoint.
public struct FCMServiceAccount: Sendable {
    public var projectID: String
    public var clientEmail: String
    public var privateKeyID: String
    public var tokenURI: URL
    public let key: RS256Key

    /// Why a key file is refused: the field, as the JSON names it, and what is wrong.
    public struct Problem: Error, Equatable, Sendable, CustomStringConvertible {
        public var field: String
        public var message: String
        public var description: String { "\(field): \(message)" }
    }

    /// Reads the key file's JSON. `allowHTTP` admits an `http:` token endpoint (a local one in tests).
    public init(json: [UInt8], allowHTTP: Bool = false) throws(Problem) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any] else {
            throw Problem(field: "service_account", message: "is not a JSON object (the key file downloaded from the Firebase console)")
        }
        func text(_ field: String) throws(Problem) -> String {
            guard let value = object[field] as? String, !value.isEmpty else { throw Problem(field: field, message: "is missing") }
            return value
        }
        guard try text("type") == "service_account" else { throw Problem(field: "type", message: "must be \"service_account\"") }
        projectID = try text("project_id")
        guard projectID.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || (0x30...0x39).contains($0) || (0x61...0x7A).contains($0) }) else {
            throw Problem(field: "project_id", message: "must be a Google Cloud project id (lower-case letters, digits and hyphens)")
        }
        clientEmail = try text("client_email")
        privateKeyID = try text("private_key_id")
        let uri = try text("token_uri")
        guard let url = URL(string: uri), url.host?.isEmpty == false, url.scheme == "https" || (allowHTTP && url.scheme == "http") else {
            throw Problem(field: "token_uri", message: "must be an https:// URL")
        }
        tokenURI = url
        let pem = try text("private_key")
        do {
            key = try RS256Key(pem: pem)
        } catch {
            throw Problem(field: "private_key", message: error.description)
        }
    }
}
