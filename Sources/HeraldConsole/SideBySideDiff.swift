/// Two texts line by line, side by side: the rows of a two-column diff. The difference itself is the
/// standard library's (`CollectionDifference`); this only lays it out.
struct SideBySideDiff {
    struct Row {
        enum Kind: String {
            case same, removed, added
        }

        var kind: Kind
        var old: String?
        var new: String?
    }

    var rows: [Row]

    init(old: [String], new: [String]) {
        let difference = new.difference(from: old)
        var removed = Set<Int>()
        var inserted = Set<Int>()
        for change in difference {
            switch change {
            case .remove(let offset, _, _): removed.insert(offset)
            case .insert(let offset, _, _): inserted.insert(offset)
            }
        }
        var rows: [Row] = []
        var (i, j) = (0, 0)
        while i < old.count || j < new.count {
            if i < old.count, removed.contains(i) {
                rows.append(Row(kind: .removed, old: old[i], new: nil))
                i += 1
            } else if j < new.count, inserted.contains(j) {
                rows.append(Row(kind: .added, old: nil, new: new[j]))
                j += 1
            } else {
                rows.append(Row(kind: .same, old: i < old.count ? old[i] : nil, new: j < new.count ? new[j] : nil))
                i += 1
                j += 1
            }
        }
        self.rows = rows
    }

    var changed: Bool { rows.contains { $0.kind != .same } }
}
