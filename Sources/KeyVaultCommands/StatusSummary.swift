/// How `keyctl status` lays out lists that can grow long (members, devices), so
/// that a family of 100 still reads in a line; `--json` keeps every entry.
enum StatusSummary {
    /// Up to this many entries are listed whole.
    static let listLimit = 10
    /// A longer list shows this many, then "… and N more".
    static let shownOfLongList = 5

    /// `entries` (already made printable) joined by commas, or the first few and how
    /// many more, with `more` saying where the whole list is.
    static func list(_ entries: [String], more: String) -> String {
        guard entries.count > listLimit else { return entries.joined(separator: ", ") }
        return entries.prefix(shownOfLongList).joined(separator: ", ")
            + " … and \(entries.count - shownOfLongList) more (\(more))"
    }
}
