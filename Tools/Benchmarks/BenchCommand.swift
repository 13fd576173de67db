import CLI
import Checksum
import Foundation
import FragmentRing
import Glibc
import Synchronization
import Syscall
import TimelineIndex

/// `ppc-tool bench <area> --json`: speed figures, each measured in this run, beside what it is compared against.
public enum BenchCommand {
    public static let command = Command(
        "bench", abstract: "Measure speed; every figure is marked measured, with date, machine and baseline.",
        discussion:
            "Build with `swift build -c release` (or `make bench`) first: a debug build's figures say so and mean little.",
        subcommands: [
            Command(
                "ring",
                abstract:
                    "FragmentRing writes vs a plain sequential write of the same bytes, same durability, same filesystem.",
                options: [
                    Option.json, .value("dir", "dir", help: "Where to write (default: a new directory under /tmp)."),
                    .value("fragments", "n", help: "Fragments per round (default 40)."),
                    .value("bytes", "n", help: "Bytes per fragment (default 3125000: 0.5 s at 50 Mbit/s)."),
                    .value("rounds", "n", help: "Alternating rounds of ring and plain (default 3)."),
                    .value(
                        "chunk", "bytes", help: "Write size, as a muxer's I/O buffer hands bytes over (default 65536)."),
                    .value("durability", "fsync|none", help: "Durability for both (default fsync)."),
                ], run: ring),
            Command(
                "index",
                abstract: "TimelineIndex appends/s, 4-source merge rate, 10 s snapshot latency.",
                options: [Option.json, .value("appends", "n", help: "Appends to time (default 50000000).")], run: index),
            BenchEncode.command, BenchDetect.command, BenchLink.command, BenchFaults.command, BenchStudio.command,
            BenchReplay.command,
        ])

    public static var build: String {
        #if DEBUG
        "debug"
        #else
        "release"
        #endif
    }

    /// Who measured what, when, on what.
    public static func provenance() -> [String: Any] {
        var u = utsname()
        uname(&u)
        func field<T>(_ v: T) -> String {
            withUnsafeBytes(of: v) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }
        let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?.split(separator: "\n")
            .first { $0.hasPrefix("model name") }.map {
                String($0.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces))
            }
        let df = ISO8601DateFormatter()
        return [
            "provenance": "measured", "date": df.string(from: Date()), "build": build,
            "machine": [
                "kernel": "\(field(u.sysname)) \(field(u.release))", "arch": field(u.machine),
                "cpus": ProcessInfo.processInfo.activeProcessorCount, "cpu": cpu ?? "unknown",
            ],
        ]
    }

    public static func emit(_ result: [String: Any], json: Bool, lines: [String]) throws {
        if json {
            try Terminal.json(result)
        } else {
            for l in lines { Terminal.out(l) }
            Terminal.out("(measured \(result["date"] ?? "") on a \(build) build)")
        }
    }

    // MARK: ring

    static func ring(_ inv: Invocation) throws -> ExitCode {
        let fragments = try inv.parsed("fragments", in: 1...100_000) ?? 40
        let bytes = try inv.parsed("bytes", in: 1...(256 << 20)) ?? 3_125_000
        let rounds = try inv.parsed("rounds", in: 1...1000) ?? 3
        let chunk = try inv.parsed("chunk", in: 1...(16 << 20)) ?? 65_536
        guard let durability = FragmentRing.Durability(rawValue: inv.value("durability") ?? "fsync") else {
            throw CommandFailure.usage("--durability: expected fsync or none")
        }
        guard fragments > 0, bytes > 0, rounds > 0, chunk > 0 else {
            throw CommandFailure.usage("--fragments, --bytes, --rounds and --chunk must be positive")
        }
        let base = inv.value("dir") ?? NSTemporaryDirectory() + "ppc-bench-ring-\(getpid())"
        try FileSystem.makeDirectory(base)
        defer { try? FileManager.default.removeItem(atPath: base) }
        var payload = [UInt8](repeating: 0, count: bytes)
        for i in 0..<bytes { payload[i] = UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 13) }
        let sync = durability == .fsync

        var ringRates: [Double] = []
        var plainRates: [Double] = []
        var hashedRates: [Double] = []
        for round in 0..<rounds {
            // Plain: the same bytes, one file per fragment, same sync, recycled the same way — no index, no checksum.
            let plainDir = "\(base)/plain-\(round)"
            try FileSystem.makeDirectory(plainDir)
            let t0 = monotonicNowNs()
            for f in 0..<fragments {
                let fd = try FileDescriptor.open("\(plainDir)/\(f).bin", O_WRONLY | O_CREAT | O_TRUNC)
                try payload.withUnsafeBytes { all in
                    for off in stride(from: 0, to: bytes, by: chunk) {
                        try fd.writeAll(UnsafeRawBufferPointer(rebasing: all[off..<min(bytes, off + chunk)]))
                    }
                }
                if sync { try fd.syncData() }
                if f >= 20 { try FileSystem.unlink("\(plainDir)/\(f - 20).bin") }
            }
            plainRates.append(Double(fragments * bytes) / (Double(monotonicNowNs() - t0) / 1e9) / 1e6)

            // Plain + XXH3: the same, hashing each chunk as it is written — the checksum the ring must compute.
            let hashedDir = "\(base)/hashed-\(round)"
            try FileSystem.makeDirectory(hashedDir)
            let hasher = XXH3.Hasher()
            let th = monotonicNowNs()
            for f in 0..<fragments {
                let fd = try FileDescriptor.open("\(hashedDir)/\(f).bin", O_WRONLY | O_CREAT | O_TRUNC)
                hasher.reset()
                try payload.withUnsafeBytes { all in
                    for off in stride(from: 0, to: bytes, by: chunk) {
                        let part = UnsafeRawBufferPointer(rebasing: all[off..<min(bytes, off + chunk)])
                        try fd.writeAll(part)
                        hasher.update(part)
                    }
                }
                if sync { try fd.syncData() }
                if f >= 20 { try FileSystem.unlink("\(hashedDir)/\(f - 20).bin") }
            }
            _ = hasher.digest
            hashedRates.append(Double(fragments * bytes) / (Double(monotonicNowNs() - th) / 1e9) / 1e6)

            let ringDir = "\(base)/ring-\(round)"
            let ring = try FragmentRing(directory: ringDir, configuration: .init(capacity: 20, durability: durability))
            let t1 = monotonicNowNs()
            for f in 0..<fragments {
                var r = try ring.reserve()
                try payload.withUnsafeBytes { all in
                    for off in stride(from: 0, to: bytes, by: chunk) {
                        try r.write(UnsafeRawBufferPointer(rebasing: all[off..<min(bytes, off + chunk)]))
                    }
                }
                _ = try ring.publish(
                    r,
                    FragmentTiming(
                        startNs: Int64(f) * 500_000_000, endNs: Int64(f + 1) * 500_000_000, frameCount: 60,
                        startsWithKeyframe: true, codec: .h264))
            }
            ringRates.append(Double(fragments * bytes) / (Double(monotonicNowNs() - t1) / 1e9) / 1e6)
        }
        func median(_ a: [Double]) -> Double { a.sorted()[a.count / 2] }
        let ringMBs = median(ringRates)
        let plainMBs = median(plainRates)
        let hashedMBs = median(hashedRates)
        var result = provenance()
        result["area"] = "ring"
        result["workload"] = [
            "fragments": fragments, "bytesPerFragment": bytes, "writeChunkBytes": chunk, "rounds": rounds,
            "durability": durability.rawValue,
            "directory": base, "filesystem": FileSystem.mountType(of: base) ?? "unknown",
        ]
        result["ringMBps"] = ringMBs
        result["plainWriteMBps"] = plainMBs
        result["ratio"] = ringMBs / plainMBs
        result["plainWriteWithXXH3MBps"] = hashedMBs
        result["ratioToPlainWithXXH3"] = ringMBs / hashedMBs
        result["target"] = ["ratio": 0.9]
        result["baseline"] =
            "plain sequential write of the same bytes, one file per fragment, same durability, same filesystem, in the same run (median of alternating rounds)"
        try emit(
            result, json: inv.flag("json"),
            lines: [
                "ring:  \(String(format: "%.1f", ringMBs)) MB/s",
                "plain: \(String(format: "%.1f", plainMBs)) MB/s  (same bytes, same durability '\(durability.rawValue)', same filesystem)",
                "ratio: \(String(format: "%.3f", ringMBs / plainMBs))  (target ≥ 0.9)",
                "plain + XXH3 of every chunk: \(String(format: "%.1f", hashedMBs)) MB/s; ring / that: \(String(format: "%.3f", ringMBs / hashedMBs))  (what the ring adds beyond its checksum)",
            ])
        return .success
    }

    // MARK: index

    static func index(_ inv: Invocation) throws -> ExitCode {
        let appends = try inv.parsed("appends", in: 1...1_000_000_000) ?? 50_000_000

        // 1. One producer appending into a 4096-entry ring.
        let t = SourceTimeline(source: SourceID(1), minimumCapacity: 4096)
        let a0 = monotonicNowNs()
        for k in 0..<appends { t.append(timeNs: Int64(k), kind: .imuSample, reference: UInt64(k)) }
        let appendSeconds = Double(monotonicNowNs() - a0) / 1e9
        let appendsPerSecond = Double(appends) / appendSeconds

        // 2. Snapshot latency of a 10 s window: what the buffer-core issue names — fragment entries of a 120 fps
        //    stream (2 per second), 48 kHz audio windows (480 samples = 10 ms each), 100 Hz IMU, detector candidates —
        //    and, for scale, the same with an entry for every one of the 120 frames per second as well.
        func snapshotLatency(perFrameEntries: Bool) -> (entries: Int, p50: Double, p99: Double) {
            let index = TimelineIndex()
            let video = index.register(SourceID(1), name: "video", rateHz: perFrameEntries ? 122 : 2, windowSeconds: 12)
            let audio = index.register(SourceID(2), name: "audio", rateHz: 100, windowSeconds: 12)
            let imu = index.register(SourceID(3), name: "imu", rateHz: 100, windowSeconds: 12)
            let events = index.register(SourceID(4), name: "detect", rateHz: 2, windowSeconds: 12)
            var frame: Int64 = 0
            for ms in Int64(0)..<12_000 {
                let ns = ms * 1_000_000
                while frame * 1_000_000_000 / 120 <= ns {
                    let ft = frame * 1_000_000_000 / 120
                    if frame % 60 == 0 {
                        video.append(
                            timeNs: ft, kind: .videoFragment, reference: UInt64(frame / 60), value: 500_000_000)
                    }
                    if perFrameEntries {
                        video.append(timeNs: ft, kind: .videoFrame, reference: UInt64(frame), value: frame / 60)
                    }
                    frame += 1
                }
                if ms % 10 == 0 {
                    audio.append(timeNs: ns, kind: .audioWindow, reference: UInt64(ms * 48), value: 480)
                    imu.append(timeNs: ns, kind: .imuSample, reference: UInt64(ms / 10))
                }
                if ms % 1500 == 0 { events.append(timeNs: ns, kind: .candidate, reference: UInt64(ms), value: ms * 48) }
            }
            var latencies: [Double] = []
            var entries = 0
            for _ in 0..<3000 {
                let s0 = monotonicNowNs()
                let snap = index.snapshot(startNs: 1_000_000_000, endNs: 11_000_000_000)
                latencies.append(Double(monotonicNowNs() - s0) / 1000)
                entries = snap.entries.count
            }
            latencies.sort()
            return (entries, latencies[latencies.count / 2], latencies[latencies.count * 99 / 100])
        }
        let issue = snapshotLatency(perFrameEntries: false)
        let perFrame = snapshotLatency(perFrameEntries: true)

        // 3. Merge rate: entries merged per second across 4 sources while all 4 producers keep appending on threads.
        let live = TimelineIndex()
        let producers = (0..<4).map { live.register(SourceID(UInt16(10 + $0)), name: "p\($0)", minimumCapacity: 4096) }
        let stop = StopFlag()
        let group = DispatchGroup()
        for (i, p) in producers.enumerated() {
            group.enter()
            Thread {
                var k: Int64 = 0
                while !stop.isSet {
                    p.append(timeNs: k * 4 + Int64(i), kind: .audioWindow, reference: UInt64(k))
                    k += 1
                }
                group.leave()
            }.start()
        }
        var merged = 0
        let m0 = monotonicNowNs()
        while monotonicNowNs() - m0 < 1_000_000_000 {
            merged += live.snapshot(startNs: 0, endNs: .max).entries.count
        }
        let mergeSeconds = Double(monotonicNowNs() - m0) / 1e9
        stop.set()
        group.wait()
        let mergeRate = Double(merged) / mergeSeconds

        var result = provenance()
        result["area"] = "index"
        result["appendsPerSecond"] = appendsPerSecond
        result["appendNs"] = appendSeconds * 1e9 / Double(appends)
        result["snapshot10s"] = [
            "entries": issue.entries, "p50Us": issue.p50, "p99Us": issue.p99, "runs": 3000,
            "window":
                "10 s: fragment entries of a 120 fps stream (2/s), 48 kHz audio windows of 10 ms, 100 Hz IMU, candidates",
        ]
        result["snapshot10sWithFrameEntries"] = [
            "entries": perFrame.entries, "p50Us": perFrame.p50, "p99Us": perFrame.p99, "runs": 3000,
            "window": "the same plus an entry per frame at 120 fps (not what the index stores today; for scale)",
        ]
        result["mergeEntriesPerSecond"] = mergeRate
        result["mergeWorkload"] =
            "4 sources × 4096-entry rings, snapshots of everything while 4 producer threads append"
        result["targets"] = ["appendsPerSecond": 20_000_000, "snapshot10sUs": 20]
        result["baseline"] = "none external: targets from the buffer-core issue"
        try emit(
            result, json: inv.flag("json"),
            lines: [
                "appends:  \(String(format: "%.1f", appendsPerSecond / 1e6)) M/s (\(String(format: "%.2f", appendSeconds * 1e9 / Double(appends))) ns each; target ≥ 20 M/s)",
                "snapshot: 10 s window of \(issue.entries) entries: p50 \(String(format: "%.1f", issue.p50)) µs, p99 \(String(format: "%.1f", issue.p99)) µs (target ≤ 20 µs)",
                "          with an entry per 120 fps frame too (\(perFrame.entries) entries): p50 \(String(format: "%.1f", perFrame.p50)) µs, p99 \(String(format: "%.1f", perFrame.p99)) µs",
                "merge:    \(String(format: "%.1f", mergeRate / 1e6)) M entries/s from 4 sources under live appends",
            ])
        return .success
    }
}

/// A flag one thread sets and others poll.
final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    var isSet: Bool { flag.load(ordering: .acquiring) }
    func set() { flag.store(true, ordering: .releasing) }
}
