/// Where a view model's list stands, for the view to show a spinner, an error, an empty state or the
/// list.
public enum ViewPhase: Sendable, Equatable {
    /// Nothing shown yet; the first load is under way.
    case loading
    /// The list is shown (and may be refreshing under it).
    case loaded
    /// The first load succeeded and there is nothing to show.
    case empty
    /// The last load failed; what was shown before, if anything, is still in the list.
    case failed(HeraldClientError)
}

extension HeraldClientError {
    /// Any error of a load, as a view shows it.
    static func shown(_ error: any Error) -> HeraldClientError {
        (HeraldClientError.from(error) as? HeraldClientError) ?? .transport(code: 0, description: "\(error)")
    }
}
