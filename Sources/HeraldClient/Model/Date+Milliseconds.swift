import Foundation

extension Date {
    /// The time on Herald's millisecond grid. Herald writes every time with milliseconds; two parsers
    /// (the generated client's, the stream's) may land a hair apart in floating point, and two versions
    /// of one notification must compare equal whichever way they came.
    var onMillisecondGrid: Date {
        Date(timeIntervalSince1970: (timeIntervalSince1970 * 1000).rounded() / 1000)
    }

    /// The time `milliseconds` after 1970, as the `_ms` twins of Herald's times give it.
    init(milliseconds: Int) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
