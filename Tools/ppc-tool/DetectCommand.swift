import Audio
import Benchmarks
import CLI
import Config
import Detect
import Foundation
import JSONInput
import Media
import Synthetic
import Syscall

/// `ppc-tool detect`: impacts in an audio file; a labelled corpus; scoring against truth.
enum DetectCommand {
    static let command = Command(
        "detect", abstract: "Find club–ball impacts in an audio file (any format libavformat reads).",
        discussion:
            "Sample indices count from the file's first sample. With --mic-to-ball the time of flight is subtracted.",
        options: [
            jsonFlag,
            .value(
                "mic-to-ball", "metres", help: "Declared mic-to-ball distance (default: none declared, no correction)."),
            .flag(
                "trace",
                help: "Also print every event the detector weighed, with its features and why it was rejected (stderr)."
            ),
        ],
        arguments: [Argument("file", help: "An audio file (WAV, FLAC, MP4, …).")],
        subcommands: [
            Command(
                "corpus", abstract: "Write a labelled corpus: NAME.wav + NAME.truth.json, clean and hard sessions.",
                options: [
                    .value("sessions", "n", help: "Sessions of each kind (default 12)."),
                    .value("seconds", "s", help: "Length of each (default 20)."),
                    .value("seed", "n", help: "First seed (default 1; with --generator room, the split's first)."),
                    .value(
                        "generator", "name",
                        help:
                            "impact (ImpactCorpus, the generator the detector was tuned on; default) or room (RoomCorpus: image-source rooms, modal impacts, the distractor library; 60 s sessions)."
                    ),
                    .value("split", "name", help: "With --generator room: tuning (default) or held-out."),
                ],
                arguments: [Argument("dir", help: "Where to write it.")], run: corpus),
            Command(
                "eval", abstract: "Score detections against truth files: precision, recall, F, onset error, speed.",
                options: [jsonFlag],
                arguments: [Argument("dir", help: "A corpus directory (NAME.wav + NAME.truth.json).")],
                run: evaluate),
            DetectDiagnostics.misses, DetectDiagnostics.events,
        ], run: detectFile)

    /// Reads a whole audio file as mono samples.
    static func readAudio(_ path: String) throws -> (samples: [Float], rate: Int) {
        do {
            let a = try MediaReader.wholeAudio(path)
            return (a.samples, a.sampleRate)
        } catch { throw CommandFailure.dataError(error.description) }
    }

    static func run(_ samples: [Float], rate: Int, micToBall: Double? = nil, trace: Bool = false) -> (
        candidates: [Candidate], seconds: Double
    ) {
        let d = detector(rate: rate, micToBall: micToBall, trace: trace)
        let t0 = monotonicNowNs()
        let found = d.detect(in: samples)
        return (found, Double(monotonicNowNs() - t0) / 1e9)
    }

    /// The file's audio fed to the detector as it is read, 64 K samples at a time, as a microphone would feed it: a
    /// recording of any length (a whole lesson, a day at the bay) costs the same memory. A gap the reader reports (samples
    /// it had to drop) is skipped on the file's sample clock, so later onsets keep their numbers.
    static func stream(_ path: String, micToBall: Double?, trace: Bool) throws -> (
        candidates: [Candidate], samples: Int64, rate: Int
    ) {
        let reader: MediaReader
        do { reader = try MediaReader(path) } catch { throw CommandFailure.dataError(error.description) }
        guard let rate = reader.audioSampleRate else { throw CommandFailure.dataError("\(path): no audio track") }
        if let problem = ImpactDetector.Settings(sampleRate: rate).problem {
            throw CommandFailure.dataError("\(path): \(problem)")
        }
        let d = detector(rate: rate, micToBall: micToBall, trace: trace)
        var found: [Candidate] = []
        var block = [Float](repeating: 0, count: 65_536)
        var next: Int64 = 0
        do {
            while let b = try block.withUnsafeMutableBufferPointer({ try reader.readAudio(into: $0) }) {
                if b.firstSample > next { d.skip(b.firstSample - next) }
                block.withUnsafeBufferPointer { all in
                    d.process(UnsafeBufferPointer(rebasing: all[0..<b.count])) { found.append($0) }
                }
                next = b.firstSample + Int64(b.count)
            }
        } catch let e as MediaError {
            throw CommandFailure.dataError(e.description)
        } catch {
            throw CommandFailure.dataError("\(path): \(error)")
        }
        return (found, next, rate)
    }

    static func detector(rate: Int, micToBall: Double?, trace: Bool) -> ImpactDetector {
        var s = ImpactDetector.Settings(sampleRate: rate)
        s.micToBallMetres = micToBall
        s.speedOfSoundMps = Configuration.defaults[.speedOfSoundMps]
        let d = ImpactDetector(s)
        if trace {
            d.trace = { at, f, decision in
                // Every feature a rule weighs (Modules/Detect/README.md); "—": not measured for this event.
                func shown(_ v: Double?, _ format: String) -> String { v.map { String(format: format, $0) } ?? "—" }
                func shown(_ v: Int?) -> String { v.map(String.init) ?? "—" }
                Terminal.err(
                    String(
                        format:
                            "event at sample %lld (%.3f s): snr %.1f dB, rise %d blocks, decay %.1f dB (3 ms %.1f, dip %.1f), above 6 kHz %.2f, above 4 kHz %.2f, ",
                        at, Double(at) / Double(rate), f.snrDb, f.riseBlocks, f.decayDb, f.earlyDecayDb, f.dipDb,
                        f.broadband, f.broadband4k)
                        + "attack \(shown(f.attackSamples)) samples (a quarter: \(shown(f.attackQuarterSamples))), "
                        + "ring \(shown(f.modality, "%.2f")), modes \(shown(f.modesDb, "%.1f")) dB, "
                        + "impulse \(shown(f.impulseDb, "%.1f")) dB, repeats \(shown(f.repetition, "%.2f")), "
                        + "dark \(shown(f.darkDb, "%.1f")) dB — \(decision)")
            }
        }
        return d
    }

    static func detectFile(_ inv: Invocation) throws -> ExitCode {
        let path = inv.argument(0)!
        let metres = try inv.parsed("mic-to-ball", in: 0.001...100.0)
        let (found, count, rate) = try stream(path, micToBall: metres, trace: inv.flag("trace"))
        let needed = ImpactDetector.minimumSamples(sampleRate: rate)
        guard count >= needed else {
            throw CommandFailure.dataError(
                "\(path): \(count) samples at \(rate) Hz is no audio to judge; the detector needs at least \(needed) (\(String(format: "%.1f", Double(needed) * 1000 / Double(rate))) ms) to learn the room's noise floor before an impact"
            )
        }
        if inv.flag("json") {
            try printJSON(
                found.map { c in
                    [
                        "id": c.id, "onsetSample": c.onsetSample, "impactSample": c.impactSample, "t0Ns": c.t0Ns,
                        "score": c.score,
                        "tofCorrectionSamples": c.tofCorrectionSamples as Any? ?? NSNull(),
                        "tofProvenance": c.tofProvenance,
                        "features": [
                            "snrDb": c.features.snrDb, "riseBlocks": c.features.riseBlocks,
                            "decayDb": c.features.decayDb, "broadband": c.features.broadband,
                        ],
                    ] as [String: Any]
                })
            return .success
        }
        Terminal.out("\(path): \(count) samples at \(rate) Hz, \(found.count) impacts")
        for c in found {
            Terminal.out(
                String(
                    format: "  onset %9lld  (%.4f s)  score %.2f  snr %.0f dB  %@", c.onsetSample,
                    Double(c.onsetSample) / Double(rate), c.score, c.features.snrDb,
                    c.tofCorrectionSamples == nil
                        ? "no tof_correction" : String(format: "tof %.1f samples", c.tofCorrectionSamples!)))
        }
        return .success
    }

    static func corpus(_ inv: Invocation) throws -> ExitCode {
        let dir = inv.argument(0)!
        let sessions = try inv.parsed("sessions", in: 1...10_000) ?? 12
        let generator = inv.value("generator") ?? "impact"
        guard generator == "impact" || generator == "room" else {
            throw CommandFailure.usage("--generator \(generator): expected impact or room")
        }
        let splitName = inv.value("split") ?? "tuning"
        guard let split = RoomCorpus.Split(rawValue: splitName) else {
            throw CommandFailure.usage("--split \(splitName): expected tuning or held-out")
        }
        let seconds = try inv.parsed("seconds", in: 3.0...3600.0) ?? (generator == "room" ? 60 : 20)
        let seed = try inv.parsed("seed", as: UInt64.self) ?? (generator == "room" ? split.seeds(1)[0] : 1)
        do { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) } catch {
            throw CommandFailure.failure("\(dir): \(error.localizedDescription)")
        }
        for kind in ImpactCorpus.Kind.allCases {
            for s in seed..<(seed + UInt64(sessions)) {
                let session =
                    generator == "room"
                    ? RoomCorpus.session(RoomCorpus.Kind(rawValue: kind.rawValue)!, seed: s, seconds: seconds)
                    : ImpactCorpus.session(kind, seed: s, seconds: seconds)
                try Data(WAVWriter.data(samples: session.samples, sampleRate: session.sampleRate))
                    .write(to: URL(fileURLWithPath: "\(dir)/\(session.name).wav"))
                let truth: [String: Any] = [
                    "sampleRate": session.sampleRate, "impacts": session.impacts,
                    "events": session.events.map { ["kind": $0.kind, "sample": $0.sample, "levelDbfs": $0.levelDbfs] },
                    "generator": generator == "room"
                        ? "ppc RoomCorpus \(kind.rawValue), seed \(s)" : "ppc ImpactCorpus \(kind.rawValue), seed \(s)",
                ]
                try JSONSerialization.data(withJSONObject: truth, options: [.prettyPrinted, .sortedKeys])
                    .write(to: URL(fileURLWithPath: "\(dir)/\(session.name).truth.json"))
            }
        }
        Terminal.out(
            "\(dir): \(2 * sessions) sessions of \(ParameterValue.format(seconds)) s (clean and hard), each NAME.wav + NAME.truth.json"
        )
        return .success
    }

    static func evaluate(_ inv: Invocation) throws -> ExitCode {
        let dir = inv.argument(0)!
        let files: [String]
        do { files = try FileSystem.list(dir).filter { $0.hasSuffix(".truth.json") }.sorted() } catch {
            throw CommandFailure.dataError("\(dir): \(error)")
        }
        guard !files.isEmpty else { throw CommandFailure.dataError("\(dir): no NAME.truth.json files") }
        var byKind: [String: DetectionScore] = [:]
        var falsePositivesBy: [String: Int] = [:]
        var distractorEvents: [String: Int] = [:]
        // Recall by how far each impact stood over the room's noise (ImpactProminence): found, and labelled, per bin.
        var foundByProminence: [String: [Int]] = [:]
        var labelledByProminence: [String: [Int]] = [:]
        var audioSeconds = 0.0
        var processing = 0.0
        var maxLatencyMs = 0.0
        for f in files {
            let name = String(f.dropLast(".truth.json".count))
            guard let data = FileManager.default.contents(atPath: "\(dir)/\(f)"),
                let truth = try? JSONInput.object(data),
                let impacts = truth["impacts"] as? [NSNumber]
            else { throw CommandFailure.dataError("\(dir)/\(f): not a truth file (needs \"impacts\": [sample, …])") }
            let (samples, rate) = try readAudio("\(dir)/\(name).wav")
            if let problem = ImpactDetector.Settings(sampleRate: rate).problem {
                throw CommandFailure.dataError("\(dir)/\(name).wav: \(problem)")
            }
            let (found, seconds) = run(samples, rate: rate)
            audioSeconds += Double(samples.count) / Double(rate)
            processing += seconds
            for c in found {
                maxLatencyMs = max(maxLatencyMs, Double(c.decidedAtSample - c.onsetSample) * 1000 / Double(rate))
            }
            let kind = String(name.split(separator: "-").first ?? "all")
            let tolerance = Int64(rate / 20)
            let onsets = impacts.map(\.int64Value)
            let matched = byKind[kind, default: DetectionScore()].add(
                detected: found.map(\.onsetSample), truth: onsets, tolerance: tolerance)
            let none = [Int](repeating: 0, count: ImpactProminence.bins.count)
            for (i, db) in ImpactProminence.decibels(samples: samples, sampleRate: rate, onsets: onsets).enumerated() {
                let b = ImpactProminence.bin(db)
                labelledByProminence[kind, default: none][b] += 1
                if matched[i] { foundByProminence[kind, default: none][b] += 1 }
            }
            // What fooled it: each detection no impact accounts for, laid at the door of the latest distractor that began
            // at most a second before it (its kind from the truth file's events), else the room itself.
            let distractors = ((truth["events"] as? [[String: Any]]) ?? []).compactMap {
                e -> (kind: String, sample: Int64)? in
                guard let k = e["kind"] as? String, !k.hasPrefix("impact"),
                    let at = (e["sample"] as? NSNumber)?.int64Value
                else { return nil }
                return (k, at)
            }
            for d in distractors { distractorEvents[d.kind, default: 0] += 1 }
            var unmatched = impacts.map(\.int64Value)
            for c in found.sorted(by: { $0.onsetSample < $1.onsetSample }) {
                if let i = unmatched.indices.min(by: {
                    abs(unmatched[$0] - c.onsetSample) < abs(unmatched[$1] - c.onsetSample)
                }),
                    abs(unmatched[i] - c.onsetSample) <= tolerance
                {
                    unmatched.remove(at: i)
                    continue
                }
                let cause =
                    distractors.filter {
                        $0.sample <= c.onsetSample + tolerance && c.onsetSample - $0.sample <= Int64(rate)
                    }
                    .max { $0.sample < $1.sample }?.kind ?? "room noise (no distractor within 1 s before)"
                falsePositivesBy[cause, default: 0] += 1
            }
        }
        let all = byKind.values.reduce(DetectionScore(), +)
        func summary(_ s: DetectionScore) -> [String: Any] {
            let e = s.errorStatistics
            return [
                "precision": s.precision, "recall": s.recall, "f": s.f, "truePositives": s.truePositives,
                "falsePositives": s.falsePositives, "falseNegatives": s.falseNegatives,
                "onsetErrorSamples": [
                    "medianAbs": e.medianAbs, "p95Abs": e.p95Abs, "maxAbs": e.maxAbs, "medianSigned": e.medianSigned,
                ],
            ]
        }
        var result = BenchCommand.provenance()
        result["area"] = "detect eval"
        result["directory"] = dir
        result["files"] = files.count
        result["matching"] = "one to one, nearest first, within ±50 ms"
        result["byKind"] = byKind.mapValues(summary)
        result["all"] = summary(all)
        let minutes = audioSeconds / 60
        result["falsePositivesByDistractor"] = falsePositivesBy.mapValues {
            ["count": $0, "perMinute": Double($0) / max(minutes, 1e-9)] as [String: Any]
        }
        result["distractorEvents"] = distractorEvents
        result["falsePositivesNote"] =
            "each false positive is put down to the latest distractor that began at most 1 s before it (the truth file's events), else to the room"
        result["recallByProminence"] = Dictionary(
            uniqueKeysWithValues: labelledByProminence.map { kind, labelled in
                (
                    kind,
                    ImpactProminence.bins.indices.map { i -> [String: Any] in
                        [
                            "stoodOverRoomNoise": ImpactProminence.bins[i].label, "labelled": labelled[i],
                            "found": foundByProminence[kind]?[i] ?? 0,
                        ]
                    }
                )
            })
        result["prominenceNote"] =
            "each impact's loudest 0.67 ms block above 2 kHz within 2 ms of its onset, against the median block of the half second before it"
        result["timesRealTime"] = audioSeconds / max(processing, 1e-9)
        result["maxDecisionLatencyMs"] = maxLatencyMs
        if inv.flag("json") {
            try printJSON(result)
        } else {
            for (kind, s) in byKind.sorted(by: { $0.key < $1.key }) + [("all", all)] {
                let e = s.errorStatistics
                Terminal.out(
                    String(
                        format:
                            "%-6@ P %.3f  R %.3f  F %.3f  (tp %d fp %d fn %d)  |onset error| median %.1f p95 %.1f max %.0f samples",
                        kind, s.precision, s.recall, s.f, s.truePositives, s.falsePositives, s.falseNegatives,
                        e.medianAbs, e.p95Abs, e.maxAbs))
            }
            let kinds = Set(falsePositivesBy.keys).union(distractorEvents.keys).sorted()
            if !kinds.isEmpty {
                Terminal.out("false positives by what preceded them (\(String(format: "%.1f", minutes)) min of audio):")
                for k in kinds {
                    let n = falsePositivesBy[k] ?? 0
                    Terminal.out(
                        String(
                            format: "  %-44@ %3d  (%.2f a minute; %d such events)", k, n,
                            Double(n) / max(minutes, 1e-9), distractorEvents[k] ?? 0))
                }
            }
            Terminal.out(
                "recall by how far the impact stood over the room's noise (above 2 kHz: its loudest 0.67 ms block against the median of the half second before):"
            )
            for (kind, labelled) in labelledByProminence.sorted(by: { $0.key < $1.key }) {
                let found = foundByProminence[kind] ?? []
                let cells = ImpactProminence.bins.indices.filter { labelled[$0] > 0 }.map { i in
                    "\(ImpactProminence.bins[i].label) \(found.indices.contains(i) ? found[i] : 0)/\(labelled[i])"
                }
                Terminal.out("  \(kind): " + cells.joined(separator: ", "))
            }
            Terminal.out(
                String(
                    format:
                        "%.0f× real time (%.1f s of audio), decisions within %.1f ms of the onset (measured, %@ build)",
                    audioSeconds / max(processing, 1e-9), audioSeconds, maxLatencyMs, BenchCommand.build))
        }
        return .success
    }
}
