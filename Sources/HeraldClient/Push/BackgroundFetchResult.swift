/// What a silent push's refresh found, as iOS wants to be told (`UIBackgroundFetchResult`).
public enum BackgroundFetchResult: Sendable, Equatable {
    case newData
    case noData
    case failed
}

#if os(iOS)
public import UIKit

extension BackgroundFetchResult {
    /// The value to pass to the app delegate's completion handler.
    public var uiKitValue: UIBackgroundFetchResult {
        switch self {
        case .newData: return .newData
        case .noData: return .noData
        case .failed: return .failed
        }
    }
}
#endif
