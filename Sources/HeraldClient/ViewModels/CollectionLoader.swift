import Observation

/// What `FeedModel` and `ChatModel` share: a collection loaded into a view, its phase, and its older
/// pages loaded one at a time with their own error.
@MainActor
@Observable
final class CollectionLoader {
    private(set) var collection: NotificationCollection?
    private(set) var phase: ViewPhase = .loading
    private(set) var isLoadingOlder = false
    private(set) var olderError: HeraldClientError?

    /// Takes the collection (the cache's last state shows at once) without loading it.
    func take(_ collection: NotificationCollection) {
        self.collection = collection
    }

    /// Forgets the collection (another one is about to be shown).
    func drop() {
        collection = nil
        phase = .loading
        olderError = nil
    }

    /// Brings the collection up to date and says what the view shows: the list, that it is empty, or
    /// the failure (what was shown stays).
    func refresh() async {
        guard let collection else { return }
        if collection.notifications.isEmpty { phase = .loading }
        let outcome = await HeraldClient.outcome { try await collection.refresh() }
        // Another collection is shown now (a category was picked meanwhile): this one's news is old.
        guard collection === self.collection else { return }
        switch outcome {
        case .success: phase = collection.notifications.isEmpty ? .empty : .loaded
        case .failure(let error): phase = .failed(.shown(error))
        }
    }

    /// Loads the next older page; does nothing when none is left or one is loading.
    func loadOlder() async {
        guard let collection, collection.hasPrevious, !isLoadingOlder else { return }
        isLoadingOlder = true
        defer { isLoadingOlder = false }
        do {
            try await collection.loadPrevious()
            olderError = nil
        } catch {
            olderError = .shown(error)
        }
    }
}
