import CLI
import Detect
import Foundation
import Synthetic

/// `ppc-tool detect misses` and `detect events`: what a change to the detector is looked at and fitted on. They read
/// the generators' tuning sessions only — RoomCorpus's held-out split is for figures, never for looking at.
enum DetectDiagnostics {
    static let generatorOption = Option.value(
        "generator", "name", help: "impact (ImpactCorpus; default) or room (RoomCorpus, tuning seeds only).")

    static let misses = Command(
        "misses",
        abstract:
            "Each missed impact of the tuning sessions with the events weighed near it; each false detection; each onset more than 4 samples off.",
        options: [
            generatorOption,
            .value("sessions", "n", help: "Sessions of each kind (default 20 impact, 3 room)."),
            .value("seed", "n", help: "First seed (default 1)."),
        ], run: listMisses)

    static let events = Command(
        "events",
        abstract:
            "Every event the detector decided on both generators' tuning sessions, with all its features, as CSV.",
        options: [
            .value("impact-sessions", "n", help: "ImpactCorpus sessions of each kind (default 12)."),
            .value("room-sessions", "n", help: "RoomCorpus tuning sessions of each kind (default 8)."),
        ],
        arguments: [Argument("file", help: "Where to write the CSV.")], run: writeEvents)

    static func sessions(_ inv: Invocation) throws(CommandFailure) -> [ImpactCorpus.Session] {
        let generator = inv.value("generator") ?? "impact"
        let first = try inv.parsed("seed", in: UInt64(1)...UInt64(600_000)) ?? 1
        switch generator {
        case "impact":
            let n = try inv.parsed("sessions", in: 1...1_000) ?? 20
            return ImpactCorpus.Kind.allCases.flatMap { kind in
                (first..<first + UInt64(n)).map { ImpactCorpus.session(kind, seed: $0, seconds: 20) }
            }
        case "room":
            let n = try inv.parsed("sessions", in: 1...1_000) ?? 3
            let seeds = RoomCorpus.Split.tuning.seeds(n + Int(first) - 1).suffix(n)
            return RoomCorpus.Kind.allCases.flatMap { kind in seeds.map { RoomCorpus.session(kind, seed: $0) } }
        default: throw CommandFailure.usage("--generator \(generator): expected impact or room")
        }
    }

    static func describe(_ f: Candidate.Features) -> String {
        String(
            format: "snr %.0f rise %d decay %.0f dip %.0f bb %.2f/%.2f attack %@", f.snrDb, f.riseBlocks, f.decayDb,
            f.dipDb, f.broadband, f.broadband4k, f.attackSamples.map(String.init) ?? "—")
    }

    static func listMisses(_ inv: Invocation) throws -> ExitCode {
        for s in try sessions(inv) {
            let d = ImpactDetector(.init(sampleRate: s.sampleRate))
            var weighed: [(Int64, Candidate.Features, Decision)] = []
            d.trace = { weighed.append(($0, $1, $2)) }
            var found: [Candidate] = []
            s.samples.withUnsafeBufferPointer { d.process($0) { found.append($0) } }
            for t in s.impacts where !found.contains(where: { abs($0.onsetSample - t) < 2400 }) {
                let e = s.events.first { $0.sample == t }
                let near = weighed.filter { abs($0.0 - t) < 4800 }.map {
                    "\($0.0 - t): \($0.2.rejection?.rawValue ?? "accepted") \(describe($0.1))"
                }
                Terminal.out("\(s.name) miss at \(t) \(e?.kind ?? "") (\(Int(e?.levelDbfs ?? 0)) dBFS): \(near)")
            }
            for c in found where !s.impacts.contains(where: { abs(c.onsetSample - $0) < 2400 }) {
                let what = s.events.filter { $0.sample <= c.onsetSample + 2400 }.max { $0.sample < $1.sample }
                Terminal.out(
                    "\(s.name) false at \(c.onsetSample): after \(what?.kind ?? "?") by \(c.onsetSample - (what?.sample ?? 0)), \(describe(c.features))"
                )
            }
            for c in found {
                if let t = s.impacts.first(where: { abs(c.onsetSample - $0) < 2400 }), abs(c.onsetSample - t) > 4 {
                    Terminal.out("\(s.name) onset off by \(c.onsetSample - t) at \(t)")
                }
            }
        }
        return .success
    }

    static func writeEvents(_ inv: Invocation) throws -> ExitCode {
        let path = inv.argument(0)!
        let impactSessions = try inv.parsed("impact-sessions", in: 0...1_000) ?? 12
        let roomSessions = try inv.parsed("room-sessions", in: 0...1_000) ?? 8
        var lines = [
            "generator,session,trigger,impact,kind,accepted,snr,rise,decay,early,dip,bb6,bb4,jump,attack,late,modality,attack4,reason,modes,repetition,impulse,dark"
        ]
        func run(_ generator: String, _ s: ImpactCorpus.Session) {
            let d = ImpactDetector(.init(sampleRate: s.sampleRate))
            d.trace = { t, f, decision in
                let truth = s.impacts.first { t - $0 < 64 && $0 - t < 160 }
                let e =
                    truth.flatMap { tr in s.events.first { $0.sample == tr } }
                    ?? s.events.filter { $0.sample <= t + 160 }.max { $0.sample < $1.sample }
                // Not measured: an empty field. A reason is quoted (it may hold a comma).
                func v(_ x: (any CustomStringConvertible)?) -> String { x.map { "\($0)" } ?? "" }
                let reason = "\"\(decision.rejection?.rawValue ?? "accepted")\""
                let fields: [String] = [
                    generator, s.name, "\(t)", truth != nil ? "1" : "0", e?.kind ?? "none",
                    decision.rejection == nil ? "1" : "0", v(f.snrDb), v(f.riseBlocks), v(f.decayDb), v(f.earlyDecayDb),
                    v(f.dipDb), v(f.broadband), v(f.broadband4k), v(f.jumpDb), v(f.attackSamples), v(f.laterPeakDb),
                    v(f.modality), v(f.attackQuarterSamples), reason, v(f.modesDb), v(f.repetition), v(f.impulseDb),
                    v(f.darkDb),
                ]
                lines.append(fields.joined(separator: ","))
            }
            s.samples.withUnsafeBufferPointer { d.process($0) { _ in } }
            for t in s.impacts { lines.append("\(generator),\(s.name),\(t),2,truth,0,,,,,,,,,,,,,,,,,") }
        }
        for kind in RoomCorpus.Kind.allCases {
            for seed in RoomCorpus.Split.tuning.seeds(roomSessions) {
                run("room", RoomCorpus.session(kind, seed: seed))
            }
        }
        for kind in ImpactCorpus.Kind.allCases {
            for seed in UInt64(1)...UInt64(max(1, impactSessions)) where impactSessions > 0 {
                run("impact", ImpactCorpus.session(kind, seed: seed, seconds: 20))
            }
        }
        do { try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8) } catch {
            throw CommandFailure.failure("\(path): cannot write (\(error.localizedDescription))")
        }
        Terminal.out("\(lines.count - 1) rows written to \(path)")
        return .success
    }
}
