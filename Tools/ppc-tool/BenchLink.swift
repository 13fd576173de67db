import CLI
import Foundation
import Link
import Synthetic
import Syscall
import Transfer

/// `ppc-tool bench link`: control round trip idle and under a saturating bulk transfer (same run), bulk MB/s beside
/// iperf3 when installed, clock offset and skew error against injected truth, devices one host holds at control
/// p99 ≤ 10 ms. Host and devices are on this machine (loopback).
enum BenchLink {
    static let command = Command(
        "link", abstract: "Control latency under bulk, bulk throughput, clock error, devices per host (loopback).",
        options: [
            jsonFlag, .value("bulk-mb", "n", help: "Size of the bulk transfer (default 256)."),
            .value("window-kib", "n", help: "Bulk bytes unacknowledged at most, KiB (default: one chunk, as the network sink sends)."),
            .value("chunk-kib", "n", help: "Bulk chunk size, KiB (default: the network sink's, 64)."),
            .value("skew-seconds", "s", help: "How long to probe for the skew figure (default 20)."),
        ], run: run)

    static func percentile(_ a: [Int64], _ p: Double) -> Double {
        guard !a.isEmpty else { return 0 }
        let s = a.sorted()
        return Double(s[min(s.count - 1, Int(Double(s.count) * p))]) / 1000  // µs
    }

    /// Heartbeat round trips on a fresh control connection, `count` of them, `gapNs` apart.
    static func controlRTTs(port: Int, device: String, count: Int, gapNs: Int64) throws -> [Int64] {
        let c = try Connection.connect(host: "127.0.0.1", port: port, channel: .control, attempts: 6)
        try c.send(.hello(protocolVersion: 1, deviceID: device, channel: .control, captureProfile: "probe"))
        _ = try c.receive(timeoutNs: 5_000_000_000)
        var out: [Int64] = []
        out.reserveCapacity(count)
        for i in 0..<count {
            let t0 = monotonicNowNs()
            try c.send(.heartbeat(sequence: UInt64(i), deviceTimeNs: t0))
            _ = try c.receive(timeoutNs: 5_000_000_000)
            out.append(monotonicNowNs() - t0)
            if gapNs > 0 {
                sleepNs(gapNs)
            }
        }
        try? c.send(.bye(reason: "bench"))
        return out
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        let bulkMB = try inv.parsed("bulk-mb", as: Int.self) ?? 256
        let chunkKiB = try inv.parsed("chunk-kib", as: Int.self) ?? (BundleSender.chunkBytes >> 10)
        guard chunkKiB > 0, chunkKiB <= 1024 else { throw CommandFailure.usage("--chunk-kib must be 1…1024") }
        let windowKiB = try inv.parsed("window-kib", as: Int.self) ?? 0
        guard windowKiB >= 0 else { throw CommandFailure.usage("--window-kib must not be negative") }
        let skewSeconds = try inv.parsed("skew-seconds", as: Double.self) ?? 20
        let dir = (ProcessInfo.processInfo.environment["PPC_BENCH_DIR"] ?? "/var/tmp") + "/ppc-bench-link-\(getpid())"
        try FileSystem.makeDirectory(dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try HostServer(host: "127.0.0.1", port: 0, library: "\(dir)/library", policy: .any)
        Thread { server.run() }.start()
        defer { server.stop() }

        // 1. Control round trip, idle.
        let idle = try controlRTTs(port: server.port, device: "idle", count: 2000, gapNs: 1_000_000)

        // 2. The same while a bulk transfer saturates the other channel.
        try FileSystem.makeDirectory("\(dir)/bundle")
        // Incompressible bytes (a SplitMix64 stream: one getrandom per 8 bytes took longer than the transfer).
        var rng = SplitMix64(seed: UInt64.random(in: 0...UInt64.max))
        let payload = (0..<(bulkMB << 20) / 8).map { _ in rng.next() }
        try payload.withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: "\(dir)/bundle/clip.mp4")) }
        let bulkDone = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var bulkSeconds = 0.0
        nonisolated(unsafe) var bulkError: (any Error)?
        Thread {
            do {
                let c = try Connection.connect(host: "127.0.0.1", port: server.port, channel: .bulk, attempts: 6)
                try c.send(.hello(protocolVersion: 1, deviceID: "bulk", channel: .bulk, captureProfile: "1920x1080@120 h264"))
                _ = try c.receive(timeoutNs: 5_000_000_000)
                let t0 = monotonicNowNs()
                _ = try BundleSender.send(directory: "\(dir)/bundle", clipID: "bench", over: c, chunkBytes: chunkKiB << 10, budget: .max, windowBytes: windowKiB << 10)
                bulkSeconds = Double(monotonicNowNs() - t0) / 1e9
            } catch { bulkError = error }
            bulkDone.signal()
        }.start()
        var busy: [Int64] = []
        while bulkDone.wait(timeout: .now()) == .timedOut {
            busy += try controlRTTs(port: server.port, device: "busy", count: 200, gapNs: 1_000_000)
        }
        if let bulkError { throw CommandFailure.failure("bulk transfer failed: \(bulkError)") }
        let bulkMBps = Double(bulkMB) / bulkSeconds

        // 3. iperf3 on the same loopback, if installed.
        var iperf: Double?
        if let bin = ["/usr/bin/iperf3"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) {
            let s = Process()
            s.executableURL = URL(fileURLWithPath: bin)
            s.arguments = ["-s", "-1", "-p", "5299"]
            s.standardOutput = FileHandle.nullDevice
            s.standardError = FileHandle.nullDevice
            try s.run()
            // The server may not be listening yet: the client is retried (a refused connect is not a measurement).
            for _ in 0..<20 where iperf == nil {
                let c = Process()
                c.executableURL = URL(fileURLWithPath: bin)
                c.arguments = ["-c", "127.0.0.1", "-p", "5299", "-t", "3", "-J", "--connect-timeout", "2000"]
                let out = Pipe()
                c.standardOutput = out
                c.standardError = FileHandle.nullDevice
                try c.run()
                let data = out.fileHandleForReading.readDataToEndOfFile()
                c.waitUntilExit()
                if let j = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                    let end = j["end"] as? [String: Any], let sum = end["sum_received"] as? [String: Any],
                    let bps = (sum["bits_per_second"] as? NSNumber)?.doubleValue, bps > 0
                {
                    iperf = bps / 8 / 1e6
                } else {
                    sleepNs(100_000_000)  // waiting for the server to listen, not a synchronisation of measured work
                }
            }
            kill(s.processIdentifier, SIGKILL)
            s.waitUntilExit()
        }

        // 3b. What the library's filesystem itself takes: the same bytes written to a fresh file in 1 MiB writes and
        // fsynced once, as the host does for every file. No transfer can store faster than this.
        var storageMBps = 0.0
        do {
            let path = "\(dir)/storage-ceiling"
            let fd = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC)
            let t0 = monotonicNowNs()
            try payload.withUnsafeBytes { all in
                var at = 0
                while at < all.count {
                    let n = min(1 << 20, all.count - at)
                    try fd.writeAll(UnsafeRawBufferPointer(rebasing: all[at..<(at + n)]), at: Int64(at))
                    at += n
                }
            }
            try fd.syncData()
            storageMBps = Double(bulkMB) / (Double(monotonicNowNs() - t0) / 1e9)
            try FileSystem.unlink(path)
        }

        // 4. Clock offset error against an injected offset (10 bursts), skew over `skewSeconds`.
        var offsetErrors: [Int64] = []
        var bounds: [Int64] = []
        var withinBound = 0
        for i in 0..<10 {
            let truth: Int64 = Int64(i + 1) * 1_000_000
            var s = DeviceLink.Settings(host: "127.0.0.1", port: server.port, deviceID: "clock-\(i)", captureProfile: "probe", syncBurst: 16, heartbeatIntervalNs: 1_000_000_000)
            s.clockOffsetNs = truth
            let link = try DeviceLink(s)
            try link.start()
            if let r = link.relation {
                offsetErrors.append(abs(r.offsetNs + truth))
                bounds.append(r.uncertaintyNs)
                if abs(r.offsetNs + truth) <= r.uncertaintyNs { withinBound += 1 }
            }
            link.close(reason: "bench")
        }
        var skewError: Double?
        do {
            var s = DeviceLink.Settings(host: "127.0.0.1", port: server.port, deviceID: "skew", captureProfile: "probe", syncBurst: 1, heartbeatIntervalNs: 1_000_000_000)
            s.clockSkewPpm = 20
            let link = try DeviceLink(s)
            let probes = max(50, Int(skewSeconds * 20))
            let gap = Int64(skewSeconds * 1e9) / Int64(probes)
            for _ in 0..<probes {
                try link.probe()
                sleepNs(gap)
            }
            if let r = link.relation, r.skewKnown { skewError = abs(r.skewPpm + 20) }
            link.close(reason: "bench")
        }

        // 5. Devices one host holds with control p99 ≤ 10 ms: n devices heartbeating at 20 Hz at once.
        var held = 0
        var heldP99 = 0.0
        for n in [4, 8, 16, 32, 64] {
            let group = DispatchGroup()
            let samples = Samples()
            for d in 0..<n {
                group.enter()
                Thread {
                    samples.add((try? controlRTTs(port: server.port, device: "many-\(d)", count: 40, gapNs: 50_000_000)) ?? [Int64.max])
                    group.leave()
                }.start()
            }
            group.wait()
            let p99 = percentile(samples.all, 0.99)
            if p99 <= 10_000 {
                held = n
                heldP99 = p99
            } else {
                break
            }
        }

        var result = BenchCommand.provenance()
        result["area"] = "link"
        result["transport"] = "TCP over loopback (127.0.0.1); host in this process; one core each is not enforced"
        result["controlRttUs"] = [
            "idle": ["p50": percentile(idle, 0.5), "p99": percentile(idle, 0.99), "n": idle.count],
            "underBulk": ["p50": percentile(busy, 0.5), "p99": percentile(busy, 0.99), "n": busy.count],
        ]
        result["bulkMBps"] = bulkMBps
        result["bulkNote"] = "\(bulkMB) MB in \(chunkKiB) KiB chunks, \(max(chunkKiB, windowKiB)) KiB unacknowledged at most, each chunk written into the host's mapped file and logged before its ack, the file fsynced once when whole and verified (resumable; library in \(dir))"
        result["storageCeilingMBps"] = storageMBps
        result["storageNote"] = "the same bytes written to a fresh file on the library's filesystem and fsynced once: what storing costs without a network"
        result["bulkVsCeiling"] = bulkMBps / min(storageMBps, iperf ?? storageMBps)
        result["iperf3MBps"] = iperf as Any? ?? "not installed (Debian: iperf3)"
        result["clockOffsetErrorUs"] = [
            "p50": percentile(offsetErrors, 0.5), "p95": percentile(offsetErrors, 0.95), "max": percentile(offsetErrors, 1.0),
            "statedBoundP50": percentile(bounds, 0.5), "withinOwnBound": "\(withinBound) of \(offsetErrors.count)",
        ]
        result["skewErrorPpm"] = skewError as Any? ?? "not measurable"
        result["skewSeconds"] = skewSeconds
        result["devicesHeldAtControlP99Le10ms"] = ["devices": held, "p99Us": heldP99, "tried": "4, 8, 16, 32, 64 at 20 Hz heartbeats"]
        result["targets"] = ["underBulkP99Ms": 5, "underBulkP99VsIdle": 2, "bulkVsIperf3": 0.5, "offsetErrorP95Us": 5, "skewErrorPpm": 0.1, "devices": 32]
        try BenchCommand.emit(result, json: inv.flag("json"), lines: [
            String(format: "control RTT idle p50 %.0f µs, p99 %.0f µs; under bulk p50 %.0f µs, p99 %.0f µs (target p99 ≤ 5 ms and ≤ 2× idle)",
                   percentile(idle, 0.5), percentile(idle, 0.99), percentile(busy, 0.5), percentile(busy, 0.99)),
            String(format: "bulk %.0f MB/s, stored and verified%@; the library's filesystem alone takes %.0f MB/s (write + one fsync), so bulk is %.2f of what storage allows", bulkMBps, iperf.map { String(format: "; iperf3 %.0f MB/s, ratio %.2f (target ≥ 0.5)", $0, bulkMBps / $0) } ?? "; iperf3 not installed", storageMBps, bulkMBps / min(storageMBps, iperf ?? storageMBps)),
            String(format: "clock offset error p50 %.1f µs, p95 %.1f µs (stated bound p50 %.1f µs; %d of %d within their own bound; target p95 ≤ 5 µs)", percentile(offsetErrors, 0.5), percentile(offsetErrors, 0.95), percentile(bounds, 0.5), withinBound, offsetErrors.count),
            skewError.map { String(format: "skew error %.3f ppm after %.0f s (target ≤ 0.1 ppm after 20 s)", $0, skewSeconds) } ?? "skew not measurable",
            "devices held at control p99 ≤ 10 ms: \(held) (p99 \(String(format: "%.0f", heldP99)) µs; target ≥ 32)",
        ])
        return .success
    }
}

/// Round trips gathered from many threads.
final class Samples: @unchecked Sendable {
    // @unchecked: every access holds `lock`.
    private let lock = NSLock()
    private var values: [Int64] = []
    func add(_ v: [Int64]) {
        lock.lock()
        values += v
        lock.unlock()
    }
    var all: [Int64] {
        lock.lock()
        defer { lock.unlock() }
        return values
    }
}
