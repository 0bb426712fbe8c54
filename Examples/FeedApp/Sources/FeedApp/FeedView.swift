#if canImport(SwiftUI)
import HeraldClient
import SwiftUI

/// What an app's list of a collection looks like: the collection is `@Observable`, so the list
/// updates as syncs, pushes and stream events change it.
struct FeedView: View {
    let collection: NotificationCollection

    var body: some View {
        List {
            ForEach(collection.notifications) { notification in
                VStack(alignment: .leading) {
                    Text(notification.data["title"]?.stringValue ?? notification.templateKey)
                        .fontWeight(notification.status == .read ? .regular : .bold)
                    Text(notification.createdAt, style: .relative)
                }
            }
            if collection.hasPrevious {
                ProgressView().task { try? await collection.loadPrevious() }
            }
        }
        .refreshable { try? await collection.refresh() }
        .task { try? await collection.refresh() }
    }
}
#endif
