import CLI
import Catalogue
import Foundation
import PayloadSource
import Studio
import Syscall

/// `ppc-host corpus export DIR`: what the coach marked, as labelled audio for `ppc-tool detect eval` — the detector's
/// first real sound. A clip marked "not a swing" is a labelled false trigger (`falsetrigger-<clipId>.wav`, no impact,
/// an event where it fired); a kept or starred clip is a swing the coach confirmed (`swing-<clipId>.wav`, its impact at
/// t0's sample). Clips the coach did not mark are left out: unconfirmed, they would label nothing.
enum Corpus {
    struct Truth: Encodable {
        struct Event: Encodable {
            var kind: String
            var sample: Int
        }
        var impacts: [Int]
        var events: [Event]
        var source: String
        var note: String
    }

    static let export = Command(
        "export", abstract: "Write the coach's labels as a detect eval corpus: NAME.wav + NAME.truth.json.",
        options: [HostCatalogue.libraryOption, HostCatalogue.catalogueOption, .flag("json", help: "As JSON.")],
        arguments: [Argument("dir", help: "Where to write the corpus (made if missing).")],
        run: { inv in
            let library = inv.value("library") ?? "library"
            let dir = inv.argument(0)!
            if inv.value("catalogue") == nil, !FileManager.default.fileExists(atPath: HostCatalogue.path(library)) {
                throw CommandFailure.dataError(
                    "\(HostCatalogue.path(library)): no catalogue yet (ppc-host catalogue rebuild --library \(library))"
                )
            }
            let catalogue = try HostCatalogue.open(library: library, url: inv.value("catalogue"))
            let clips: [CatalogueClip]
            do { clips = Catalogue.readable(try catalogue.clips()).clips } catch {
                throw CommandFailure.failure("\(error)")
            }
            do { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) } catch {
                throw CommandFailure.dataError("\(dir): cannot be made (\(error))")
            }
            var written: [String: Int] = [:]
            var skipped: [String] = []
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            for c in clips.sorted(by: { $0.clipID < $1.clipID }) {
                let kind: String
                if c.flags.contains(.notASwing) {
                    kind = "falsetrigger"
                } else if c.flags.contains(.kept) || c.flags.contains(.starred) {
                    kind = "swing"
                } else {
                    continue
                }
                let wav = c.path + "/audio.wav"
                guard FileSystem.isRegularFile(wav) else {
                    skipped.append("\(c.clipID): no audio.wav (a camera without a microphone)")
                    continue
                }
                let impact: Int
                do {
                    guard let s = Studio.impactSample(try ClipMeta.read(c.path + "/meta.json")) else {
                        skipped.append("\(c.clipID): meta.json places no audio")
                        continue
                    }
                    impact = s
                } catch {
                    skipped.append("\(c.clipID): \(error)")
                    continue
                }
                let name = "\(kind)-\(c.clipID)"
                let truth = Truth(
                    impacts: kind == "swing" ? [impact] : [],
                    events: kind == "swing" ? [] : [.init(kind: "not-a-swing", sample: impact)],
                    source: "\(c.device)/\(c.clipID)",
                    note: kind == "swing"
                        ? "a swing the coach kept or starred: its impact at t0's sample (meta.json's sample clock)"
                        : "the coach said this was not a swing: where the detector fired is an event, not an impact")
                do {
                    let target = "\(dir)/\(name).wav"
                    if FileManager.default.fileExists(atPath: target) {
                        try FileManager.default.removeItem(atPath: target)
                    }
                    try FileManager.default.copyItem(atPath: wav, toPath: target)
                    try FileSystem.writeAtomically(Array(try encoder.encode(truth)), to: "\(dir)/\(name).truth.json")
                } catch { throw CommandFailure.failure("\(dir)/\(name): \(error)") }
                written[kind, default: 0] += 1
            }
            if inv.flag("json") {
                struct Said: Encodable {
                    var directory: String
                    var written: [String: Int]
                    var skipped: [String]
                }
                try Terminal.json(Said(directory: dir, written: written, skipped: skipped))
            } else {
                for s in skipped { Terminal.err("ppc-host: left out: \(s)") }
                Terminal.out(
                    "ppc-host: \(written["swing"] ?? 0) confirmed swing(s) and \(written["falsetrigger"] ?? 0) false trigger(s) written to \(dir) (ppc-tool detect eval \(dir) scores the detector on them)"
                )
            }
            return .success
        })

    static let command = Command(
        "corpus", abstract: "The field corpus: what coaches marked, as labelled audio for the detector.",
        subcommands: [export])
}
