import Audio
import CLI
import Detect
import Foundation
import Synthetic
import Syscall

/// `ppc-tool bench detect`: the detector's speed on one core, and its scores, beside `aubioonset` (Debian's
/// aubio-tools) on the same files when it is installed.
enum BenchDetect {
    static let command = Command(
        "detect",
        abstract: "Detector × real time on one core and its scores, beside aubioonset when installed (target ≥ 1000×).",
        options: [
            Option.json, .value("sessions", "n", help: "ImpactCorpus sessions of each kind (default 6, 20 s each)."),
            .value(
                "room-sessions", "n",
                help:
                    "RoomCorpus (the independent generator) sessions of each kind and split (default 32, 60 s each: fewer vary by several points of F)."
            ),
        ], run: run)

    static func run(_ inv: Invocation) throws -> ExitCode {
        let sessions = try inv.parsed("sessions", in: 1...10_000) ?? 6
        let roomSessions = try inv.parsed("room-sessions", in: 0...10_000) ?? 32
        let dir = NSTemporaryDirectory() + "ppc-bench-detect-\(getpid())"
        try FileSystem.makeDirectory(dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var ours = DetectionScore()
        var aubio = DetectionScore()
        var audioSeconds = 0.0
        var oursSeconds = 0.0
        var aubioSeconds = 0.0
        let aubioPath = ["/usr/bin/aubioonset", "/usr/local/bin/aubioonset"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        for kind in ImpactCorpus.Kind.allCases {
            // Seeds 1000+: neither the tests' nor the eval example's.
            for seed in UInt64(1000)..<UInt64(1000 + sessions) {
                let s = ImpactCorpus.session(kind, seed: seed, seconds: 20)
                audioSeconds += Double(s.samples.count) / Double(s.sampleRate)
                let started = monotonicNowNs()
                let found = ImpactDetector(.init(sampleRate: s.sampleRate)).detect(in: s.samples)
                let secs = Double(monotonicNowNs() - started) / 1e9
                oursSeconds += secs
                ours.add(detected: found.map(\.onsetSample), truth: s.impacts, tolerance: Int64(s.sampleRate / 20))
                guard let aubioPath else { continue }
                let wav = "\(dir)/\(s.name).wav"
                try Data(WAVWriter.data(samples: s.samples, sampleRate: s.sampleRate)).write(
                    to: URL(fileURLWithPath: wav))
                let p = Process()
                p.executableURL = URL(fileURLWithPath: aubioPath)
                p.arguments = ["-i", wav, "-T", "samples", "-M", "0.25"]
                let out = Pipe()
                p.standardOutput = out
                p.standardError = FileHandle.nullDevice
                let t0 = monotonicNowNs()
                try p.run()
                let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                p.waitUntilExit()
                aubioSeconds += Double(monotonicNowNs() - t0) / 1e9
                let onsets = text.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
                    .map { Int64($0) }
                aubio.add(detected: onsets, truth: s.impacts, tolerance: Int64(s.sampleRate / 20))
            }
        }
        // The independent generator, both kinds, both splits (the held-out split was never used to tune).
        // Fed as a live microphone feeds it, a 5 ms ALSA period at a time, each call timed: the slowest period is what
        // a capture thread must absorb in its buffer (an event's decision and measures land in one period).
        var room: [String: DetectionScore] = [:]
        var slowestPeriodNs: Int64 = 0
        var periods = 0
        for kind in RoomCorpus.Kind.allCases {
            for split in RoomCorpus.Split.allCases {
                var score = DetectionScore()
                for seed in split.seeds(roomSessions) {
                    let s = RoomCorpus.session(kind, seed: seed)
                    let d = ImpactDetector(.init(sampleRate: s.sampleRate))
                    var found: [Candidate] = []
                    found.reserveCapacity(256)
                    let period = s.sampleRate / 200
                    s.samples.withUnsafeBufferPointer { all in
                        var i = 0
                        while i < all.count {
                            let n = min(period, all.count - i)
                            let t0 = monotonicNowNs()
                            d.process(UnsafeBufferPointer(rebasing: all[i..<(i + n)])) { found.append($0) }
                            slowestPeriodNs = max(slowestPeriodNs, monotonicNowNs() - t0)
                            periods += 1
                            i += n
                        }
                    }
                    score.add(detected: found.map(\.onsetSample), truth: s.impacts, tolerance: Int64(s.sampleRate / 20))
                }
                room["\(kind.rawValue) \(split.rawValue)"] = score
            }
        }
        func summary(_ s: DetectionScore) -> [String: Any] {
            let e = s.errorStatistics
            return [
                "precision": s.precision, "recall": s.recall, "f": s.f,
                "onsetErrorSamples": ["medianAbs": e.medianAbs, "p95Abs": e.p95Abs],
            ]
        }
        var result = BenchCommand.provenance()
        result["area"] = "detect"
        result["workload"] =
            "\(sessions) clean + \(sessions) hard synthetic sessions of 20 s at 48 kHz (seeds 1000+), \(Int(audioSeconds)) s of audio"
        result["ppc"] = summary(ours).merging(["timesRealTime": audioSeconds / oursSeconds, "threads": 1]) { a, _ in a }
        result["target"] = [
            "timesRealTime": 1000, "fClean": 0.99, "fHard": 0.90, "onsetMedianAbs": 1, "onsetP95Abs": 4,
        ]
        if roomSessions > 0 {
            result["roomCorpus"] = [
                "workload":
                    "RoomCorpus (independent generator): \(roomSessions) sessions of 60 s at 48 kHz per kind and split (tuning seeds 1…, held-out 700001…)",
                "slowestPeriodUs": Double(slowestPeriodNs) / 1e3,
                "slowestPeriodOf":
                    "\(periods) periods of 5 ms, each fed and timed alone (\(BenchCommand.build) build); what an ALSA capture buffer (160 ms by default) must absorb where the detector reads the card itself (`selftest`; a session reads ahead into a 2 s queue)",
            ].merging(room.mapValues { summary($0) as Any }) { a, _ in a }
        }
        if aubioPath != nil {
            result["aubioonset"] = summary(aubio).merging([
                "timesRealTime": audioSeconds / aubioSeconds,
                "settings": "default hfc, -M 0.25 s, process start and WAV read included",
            ]) { a, _ in a }
        } else {
            result["aubioonset"] = "not installed (Debian: aubio-tools)"
        }
        let e = ours.errorStatistics
        var lines = [
            String(
                format:
                    "ppc:        %.0f× real time on one core; F %.3f (P %.3f R %.3f); |onset error| median %.0f, p95 %.0f samples",
                audioSeconds / oursSeconds, ours.f, ours.precision, ours.recall, e.medianAbs, e.p95Abs)
        ]
        for (name, s) in room.sorted(by: { $0.key < $1.key }) {
            let r = s.errorStatistics
            lines.append(
                String(
                    format:
                        "RoomCorpus %-15@ F %.3f (P %.3f R %.3f); |onset error| median %.0f, p95 %.0f samples (%d impacts)",
                    name, s.f, s.precision, s.recall, r.medianAbs, r.p95Abs, s.truePositives + s.falseNegatives))
        }
        if roomSessions > 0 {
            lines.append(
                String(
                    format:
                        "RoomCorpus slowest 5 ms period (the one holding a decision and its measures): %.0f µs of %d, %@ build",
                    Double(slowestPeriodNs) / 1e3, periods, BenchCommand.build))
        }
        if aubioPath != nil {
            let a = aubio.errorStatistics
            lines.append(
                String(
                    format:
                        "aubioonset: %.0f× real time; F %.3f (P %.3f R %.3f); |onset error| median %.0f, p95 %.0f samples (same files, same matching)",
                    audioSeconds / aubioSeconds, aubio.f, aubio.precision, aubio.recall, a.medianAbs, a.p95Abs))
        } else {
            lines.append("aubioonset: not installed (apt-get install aubio-tools) — no side-by-side figure")
        }
        try BenchCommand.emit(result, json: inv.flag("json"), lines: lines)
        return .success
    }
}
