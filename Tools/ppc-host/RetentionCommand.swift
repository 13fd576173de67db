import CLI
import Catalogue
import Foundation
import Studio

/// `ppc-host retention`: frees space from discarded swings first — every angle of a swing discarded, received longer
/// ago than `--discarded-after` — and says what it removed. A kept or starred swing is never removed by it.
enum Retention {
    /// `7d`, `36h`, `90m`, `0d` as seconds; nil when it is not one.
    static func seconds(_ text: String) -> Double? {
        guard let unit = text.last, let n = Double(text.dropLast()), n >= 0, n.isFinite else { return nil }
        switch unit {
        case "d": return n * 86_400
        case "h": return n * 3_600
        case "m": return n * 60
        default: return nil
        }
    }

    static let command = Command(
        "retention",
        abstract: "Free space from discarded swings: remove those received longer ago than --discarded-after.",
        discussion: """
            A swing is removed when every angle is discarded (and none kept or starred) and it was received longer ago
            than --discarded-after: each angle's folder and catalogue entry. What it removed is listed, with the bytes
            freed; --dry-run lists without removing.
            """,
        options: [
            HostCatalogue.libraryOption, HostCatalogue.catalogueOption,
            .value("discarded-after", "age", help: "How long a discarded swing is kept: 7d, 36h, 90m (required)."),
            .flag("dry-run", help: "Say what would be removed; remove nothing."), .flag("json", help: "As JSON."),
        ],
        run: { inv in
            let library = inv.value("library") ?? "library"
            guard let text = inv.value("discarded-after") else {
                throw CommandFailure.usage("--discarded-after is required: how long a discarded swing is kept (7d)")
            }
            guard let age = seconds(text) else {
                throw CommandFailure.usage("--discarded-after '\(text)': an age such as 7d, 36h or 90m")
            }
            if inv.value("catalogue") == nil, !FileManager.default.fileExists(atPath: HostCatalogue.path(library)) {
                throw CommandFailure.dataError(
                    "\(HostCatalogue.path(library)): no catalogue yet (ppc-host catalogue rebuild --library \(library))"
                )
            }
            let catalogue = try HostCatalogue.open(library: library, url: inv.value("catalogue"))
            let cutoff = ISO8601DateFormatter().string(from: Date(timeIntervalSinceNow: -age))
            let swings: [[CatalogueClip]]
            do { swings = Catalogue.placedSwings(Catalogue.readable(try catalogue.clips()).clips) } catch {
                throw CommandFailure.failure("\(error)")
            }
            let due = swings.filter { s in
                s.allSatisfy { $0.flags.contains(.discarded) && !$0.flags.contains(.starred) }
                    && (s.map(\.receivedAt).max() ?? "") < cutoff
            }.reversed()
            var removed: [(swing: String, clips: [String], bytes: Int64)] = []
            var failures: [String] = []
            for s in due {
                let id = s.first.map { $0.swingID ?? $0.clipID } ?? ""
                if inv.flag("dry-run") {
                    removed.append((id, s.map(\.clipID), s.map(\.bytes).reduce(0, +)))
                    continue
                }
                do {
                    let r = try LibraryRemoval.remove(s, library: library, catalogue: catalogue)
                    removed.append((id, r.clips, r.bytes))
                } catch { failures.append("\(error)") }
            }
            let bytes = removed.map(\.bytes).reduce(0, +)
            if inv.flag("json") {
                struct Report: Encodable {
                    struct Swing: Encodable {
                        var swing: String
                        var clips: [String]
                        var bytes: Int64
                    }
                    var dryRun: Bool
                    var discardedBefore: String
                    var removed: [Swing]
                    var bytes: Int64
                    var failures: [String]
                }
                let report = Report(
                    dryRun: inv.flag("dry-run"), discardedBefore: cutoff,
                    removed: removed.map { .init(swing: $0.swing, clips: $0.clips, bytes: $0.bytes) }, bytes: bytes,
                    failures: failures)
                try Terminal.json(report)
            } else {
                for r in removed {
                    Terminal.out(
                        "\(inv.flag("dry-run") ? "would remove" : "removed") swing \(r.swing): \(r.clips.joined(separator: ", ")) (\(r.bytes) bytes)"
                    )
                }
                Terminal.out(
                    "ppc-host: \(removed.count) discarded swing(s) received before \(cutoff) \(inv.flag("dry-run") ? "would free" : "freed") \(bytes) bytes"
                )
            }
            for f in failures { Terminal.err("ppc-host: \(f)") }
            return failures.isEmpty ? .success : .failure
        })
}
