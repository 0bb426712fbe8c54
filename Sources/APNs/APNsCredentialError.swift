/// A credential that cannot be used, with a message fit for the operator who uploaded it.
public enum APNsCredentialError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidKey(String)
    case invalidCertificate(String)

    public var description: String {
        switch self {
        case .invalidKey(let message), .invalidCertificate(let message): return message
        }
    }
}
