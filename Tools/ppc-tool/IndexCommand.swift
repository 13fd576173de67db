import CLI
import Foundation
import TimelineIndex

/// `ppc-tool index inspect FILE`: read a saved timeline snapshot (a bundle's index.bin).
enum IndexCommand {
    static let command = Command(
        "index", abstract: "Inspect saved timeline snapshots.",
        subcommands: [
            Command(
                "inspect", abstract: "List a snapshot's entries in time order; exit 65 if it is damaged.",
                options: [jsonFlag], arguments: [Argument("file", help: "A snapshot (index.bin).")], run: inspect)
        ])

    static func inspect(_ inv: Invocation) throws -> ExitCode {
        let path = inv.argument(0)!
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CommandFailure.dataError("\(path): cannot read")
        }
        let snapshot: TimelineSnapshot
        do {
            snapshot = try TimelineSnapshot(decoding: Array(data))
        } catch {
            throw CommandFailure.dataError("\(path): \(error)")
        }
        func name(_ s: SourceID) -> String { snapshot.sourceNames[s] ?? String(s.rawValue) }
        if inv.flag("json") {
            try printJSON([
                "startNs": snapshot.startNs, "endNs": snapshot.endNs,
                "sources": snapshot.sourceNames.map { ["id": Int($0.key.rawValue), "name": $0.value] },
                "entries": snapshot.entries.map {
                    [
                        "timeNs": $0.timeNs, "source": Int($0.source.rawValue), "kind": $0.kind.description,
                        "flags": Int($0.flags), "reference": $0.reference, "value": $0.value,
                    ] as [String: Any]
                },
            ])
            return .success
        }
        Terminal.out("\(path): [\(snapshot.startNs), \(snapshot.endNs)] ns, \(snapshot.entries.count) entries")
        for e in snapshot.entries {
            Terminal.out("  \(e.timeNs)  \(name(e.source))  \(e.kind)  ref=\(e.reference)  value=\(e.value)")
        }
        return .success
    }
}
