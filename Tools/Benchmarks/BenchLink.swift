import CLI
import Checksum
import Crypto
import Foundation
import JSONInput
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
            Option.json, .value("bulk-mb", "n", help: "Size of the bulk transfer (default 256)."),
            .value(
                "window-kib", "n",
                help: "Bulk bytes unacknowledged at most, KiB (default: one chunk, as the network sink sends)."),
            .value("chunk-kib", "n", help: "Bulk chunk size, KiB (default: the network sink's, 64)."),
            .value("skew-seconds", "s", help: "How long to probe for the skew figure (default 20)."),
            .value(
                "network-mbit", "n",
                help:
                    "Also measure across a link shaped to this rate between two network namespaces (default 1000; 0: skip; needs root)."
            ),
            .flag(
                "network-only",
                help:
                    "Only the shaped link: iperf3, the link alone, stored bulk, control round trips idle and under bulk."
            ),
        ], run: run)

    static func percentile(_ a: [Int64], _ p: Double) -> Double {
        guard !a.isEmpty else { return 0 }
        let s = a.sorted()
        return Double(s[min(s.count - 1, Int(Double(s.count) * p))]) / 1000  // µs
    }

    /// The bench's own keys: one host and one device paired in memory, for the encrypted passes (no state touched).
    enum Keys {
        static let host = KeyPair.generate()
        static let device = KeyPair.generate()
        static let deviceID = "bench"
        static let hostSecurity = HostSecurity(
            identity: host, deviceFor: { $0 == Keys.device.publicKey ? Keys.deviceID : nil }, allowPlaintext: true)
        static let deviceSecurity = DeviceSecurity(identity: device, hostKey: host.publicKey)
    }

    /// A connection as the bench's device makes it: encrypted (paired in memory) or plaintext; the device name it may
    /// claim (an encrypted link's id is the one it was paired as).
    static func connect(host: String, port: Int, channel: LinkMessage.Channel, secure: Bool, device: String) throws -> (
        Connection, String
    ) {
        let c = try Connection.connect(host: host, port: port, channel: channel, attempts: 6)
        if secure { try c.secure(as: Keys.deviceSecurity, channel: channel) }
        return (c, secure ? Keys.deviceID : device)
    }

    /// Heartbeat round trips on a fresh control connection, `count` of them, `gapNs` apart.
    static func controlRTTs(
        host: String = "127.0.0.1", port: Int, device: String, count: Int, gapNs: Int64, secure: Bool = false
    ) throws -> [Int64] {
        let (c, name) = try connect(host: host, port: port, channel: .control, secure: secure, device: device)
        try c.send(.hello(protocolVersion: 1, deviceID: name, channel: .control, captureProfile: "probe"))
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

    /// Sends `bundle` over a bulk channel to `port` while control round trips to `controlPort` (default: the same host)
    /// are measured back to back, `times` over (as clips of their own); returns the transfers' duration, those round
    /// trips and the chunk size the sender chose.
    static func bulkUnderControl(
        host: String = "127.0.0.1", port: Int, bundle: String, chunkKiB: Int?, windowKiB: Int, controlPort: Int? = nil,
        times: Int = 1,
        secure: Bool = false
    ) throws -> (seconds: Double, control: [Int64], chunkBytes: Int) {
        let outcome = ResultBox<(seconds: Double, chunkBytes: Int)>()
        Thread {
            outcome.result = Result {
                let (c, name) = try connect(host: host, port: port, channel: .bulk, secure: secure, device: "bulk")
                try c.send(
                    .hello(protocolVersion: 1, deviceID: name, channel: .bulk, captureProfile: "1920x1080@120 h264"))
                _ = try c.receive(timeoutNs: 5_000_000_000)
                let t0 = monotonicNowNs()
                var chunkBytes = 0
                for i in 0..<times {
                    chunkBytes = try BundleSender.send(
                        directory: bundle, clipID: "bench-\(i)", over: c, chunkBytes: chunkKiB.map { $0 << 10 },
                        budget: .max, windowBytes: windowKiB << 10
                    ).chunkBytes
                }
                return (Double(monotonicNowNs() - t0) / 1e9, chunkBytes)
            }
            outcome.done.signal()
        }.start()
        var busy: [Int64] = []
        while outcome.done.wait(timeout: .now()) == .timedOut {
            busy += try controlRTTs(
                host: host, port: controlPort ?? port, device: "busy", count: 200, gapNs: 1_000_000, secure: secure)
        }
        let sent: (seconds: Double, chunkBytes: Int)
        do { sent = try outcome.result!.get() } catch { throw CommandFailure.failure("bulk transfer failed: \(error)") }
        return (sent.seconds, busy, sent.chunkBytes)
    }

    /// iperf3's throughput in MB/s (one TCP stream, 3 s): over loopback, or from `across`'s device namespace to its host
    /// namespace; client and server pinned to the given cores when asked; nil when iperf3 is not installed.
    static func iperf3MBps(pinned: (client: Int, server: Int)?, across: ShapedLink? = nil) throws -> Double? {
        guard let bin = ["/usr/bin/iperf3"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            return nil
        }
        let s = Process()
        s.executableURL = URL(fileURLWithPath: across == nil ? bin : "/usr/sbin/ip")
        s.arguments = (across.map { ["netns", "exec", $0.hostNamespace, bin] } ?? []) + ["-s", "-1", "-p", "5299"]
        s.standardOutput = FileHandle.nullDevice
        s.standardError = FileHandle.nullDevice
        try s.run()
        defer {
            ProcessSignal.send(SIGKILL, to: s.processIdentifier)
            s.waitUntilExit()
        }
        // The server may not be listening yet: the client is retried (a refused connect is not a measurement).
        for _ in 0..<20 {
            let c = Process()
            c.executableURL = URL(fileURLWithPath: across == nil ? bin : "/usr/sbin/ip")
            c.arguments =
                (across.map { ["netns", "exec", $0.deviceNamespace, bin] } ?? []) + [
                    "-c", across?.hostAddress ?? "127.0.0.1", "-p", "5299", "-t", "3", "-J", "--connect-timeout",
                    "2000",
                ] + (pinned.map { ["-A", "\($0.client),\($0.server)"] } ?? [])
            let out = Pipe()
            c.standardOutput = out
            c.standardError = FileHandle.nullDevice
            try c.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            c.waitUntilExit()
            if let j = try? JSONInput.object(data),
                let end = j["end"] as? [String: Any], let sum = end["sum_received"] as? [String: Any],
                let bps = (sum["bits_per_second"] as? NSNumber)?.doubleValue, bps > 0
            {
                return bps / 8 / 1e6
            }
            sleepNs(100_000_000)  // waiting for the server to listen, not a synchronisation of measured work
        }
        return nil
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        let bulkMB = try inv.parsed("bulk-mb", in: 1...4096) ?? 256
        let chunkKiB = try inv.parsed("chunk-kib", in: 1...1024)
        let windowKiB = try inv.parsed("window-kib", in: 0...(1 << 20)) ?? 0
        let skewSeconds = try inv.parsed("skew-seconds", in: 1.0...3600.0) ?? 20
        let networkMbit = try inv.parsed("network-mbit", in: 0...1_000_000) ?? 1000
        let dir = (ProcessInfo.processInfo.environment["PPC_BENCH_DIR"] ?? "/var/tmp") + "/ppc-bench-link-\(getpid())"
        try FileSystem.makeDirectory(dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try HostServer(
            host: "127.0.0.1", port: 0, library: "\(dir)/library", policy: .any, security: Keys.hostSecurity)
        Thread { _ = server.run() }.start()
        defer { server.stop() }

        // Incompressible bytes (a SplitMix64 stream: one getrandom per 8 bytes took longer than the transfer).
        try FileSystem.makeDirectory("\(dir)/bundle")
        var rng = SplitMix64(seed: UInt64.random(in: 0...UInt64.max))
        let payload = (0..<(bulkMB << 20) / 8).map { _ in rng.next() }
        try payload.withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: "\(dir)/bundle/clip.mp4")) }

        if inv.flag("network-only") {
            var result = BenchCommand.provenance()
            result["area"] = "link"
            let mbit = networkMbit == 0 ? 1000 : networkMbit
            let shaped = acrossShapedLink(
                megabitsPerSecond: mbit, bundle: "\(dir)/bundle", bulkMB: bulkMB, chunkKiB: chunkKiB,
                windowKiB: windowKiB, library: "\(dir)/library-shaped")
            result["shapedLink"] = shaped
            result["targets"] = [
                "shapedLink.linkVsIperf3": 0.5, "shapedLink.bulkVsIperf3": 0.5,
                "shapedLink.underStoredBulkP99VsIdle": 2,
            ]
            try BenchCommand.emit(result, json: inv.flag("json"), lines: [shapedLine(shaped, mbit: mbit)])
            return shaped["measured"] as? Bool == true ? .success : .failure
        }

        // 1. Control round trip, idle.
        let idle = try controlRTTs(port: server.port, device: "idle", count: 2000, gapNs: 1_000_000)

        // 2. The same while a bulk transfer saturates the other channel.
        let stored = try bulkUnderControl(
            port: server.port, bundle: "\(dir)/bundle", chunkKiB: chunkKiB, windowKiB: windowKiB)
        let busy = stored.control
        let bulkMBps = Double(bulkMB) / stored.seconds

        // 2b. The link alone, as iperf3 measures a network: the same sender, the same frames, each chunk hashed and
        // verified on arrival and acknowledged, the whole file verified, and nothing stored.
        let linkOnly = try LinkOnlyReceiver(security: Keys.hostSecurity)
        Thread { linkOnly.run() }.start()
        defer { linkOnly.stop() }
        // Four times over: the link alone is fast enough that one pass would give control too few round trips to judge.
        let bare = try bulkUnderControl(
            port: linkOnly.port, bundle: "\(dir)/bundle", chunkKiB: chunkKiB, windowKiB: windowKiB,
            controlPort: server.port, times: 4)
        let linkMBps = Double(4 * bulkMB) / bare.seconds
        // 2c. The same, encrypted (pairing done in memory): throughput, control under it, and the CPU it costs — both
        // ends are in this process, so the CPU figure is the device's sealing and the host's opening together.
        let idleSecure = try controlRTTs(port: server.port, device: "idle", count: 2000, gapNs: 1_000_000, secure: true)
        let cpuPlain0 = processCPUNs()
        _ = try bulkUnderControl(
            port: linkOnly.port, bundle: "\(dir)/bundle", chunkKiB: chunkKiB, windowKiB: windowKiB,
            controlPort: server.port, times: 1)
        let cpuPlainPerGB = Double(processCPUNs() - cpuPlain0) / 1e9 / (Double(bulkMB) / 1024)
        let cpuSecure0 = processCPUNs()
        let bareSecure = try bulkUnderControl(
            port: linkOnly.port, bundle: "\(dir)/bundle", chunkKiB: chunkKiB, windowKiB: windowKiB,
            controlPort: server.port, times: 4, secure: true)
        let cpuSecurePerGB = Double(processCPUNs() - cpuSecure0) / 1e9 / (Double(4 * bulkMB) / 1024)
        let linkSecureMBps = Double(4 * bulkMB) / bareSecure.seconds

        // 3. iperf3 on the same loopback, if installed: on every core, and on the cores bulk may use (the like-for-like
        // figure: ppc keeps one core free of bulk so control never waits for a CPU).
        let spare = Array(ThreadPriority.allowedCores(ofProcess: true).dropFirst())
        let iperf = try iperf3MBps(pinned: nil)
        let iperfPinned = spare.isEmpty ? nil : try iperf3MBps(pinned: (spare[0], spare[min(1, spare.count - 1)]))
        let iperfLike = iperfPinned ?? iperf

        // 3a. Across a shaped link, where the network and not the CPU is the bottleneck.
        let shaped: [String: Any] =
            networkMbit == 0
            ? ["measured": false, "why": "--network-mbit 0"]
            : acrossShapedLink(
                megabitsPerSecond: networkMbit, bundle: "\(dir)/bundle", bulkMB: bulkMB, chunkKiB: chunkKiB,
                windowKiB: windowKiB, library: "\(dir)/library-shaped")

        // 3b. What the library's filesystem itself takes: the same bytes written to a fresh file in 1 MiB writes, each
        // one's writeback started and the earlier ones waited for, and fsynced once, as the host does for every file.
        // No transfer can store faster than this.
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
                    // Written back as the host writes back each chunk: started at once, the earlier ones waited for.
                    try fd.startWriteback(offset: Int64(at), count: Int64(n))
                    if at > 0 { try fd.awaitWriteback(offset: 0, count: Int64(at)) }
                    at += n
                }
            }
            try fd.syncData()
            storageMBps = Double(bulkMB) / (Double(monotonicNowNs() - t0) / 1e9)
            try FileSystem.unlink(path)
            // The disk finishes this stage's work (writeback, the discard an unlink issues on a `discard` mount) now,
            // not during the clock stage that follows: a burst measured while it ran was off by 64 µs.
            FileSystem.syncEverything()
        }

        // 4. Clock offset error against an injected offset (10 bursts), skew over `skewSeconds`.
        var offsetErrors: [Int64] = []
        var bounds: [Int64] = []
        var withinBound = 0
        for i in 0..<10 {
            let truth: Int64 = Int64(i + 1) * 1_000_000
            var s = DeviceLink.Settings(
                host: "127.0.0.1", port: server.port, deviceID: "clock-\(i)", captureProfile: "probe", syncBurst: 16,
                heartbeatIntervalNs: 1_000_000_000)
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
            var s = DeviceLink.Settings(
                host: "127.0.0.1", port: server.port, deviceID: "skew", captureProfile: "probe", syncBurst: 1,
                heartbeatIntervalNs: 1_000_000_000)
            s.clockSkewPpm = 20
            let link = try DeviceLink(s)
            let probes = max(50, Int(skewSeconds * 20))
            let gap = Int64(skewSeconds * 1e9) / Int64(probes)
            for _ in 0..<probes {
                try link.probe()
                sleepNs(gap)
            }
            if let r = link.relation, r.skewKnown { skewError = abs(r.skewPpm + 20) }
            if let dump = ProcessInfo.processInfo.environment["PPC_DUMP_SKEW"] {
                let lines = link.syncSamples.map { "\($0.t1) \($0.t2) \($0.t3) \($0.t4)" }.joined(separator: "\n")
                try? lines.write(toFile: dump, atomically: false, encoding: .utf8)
            }
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
                    samples.add(
                        (try? controlRTTs(port: server.port, device: "many-\(d)", count: 40, gapNs: 50_000_000)) ?? [
                            Int64.max
                        ])
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
        result["linkBulkMBps"] = linkMBps
        result["linkBulkNote"] =
            "the same bundle sent four times (four clips) to a receiver that verifies every chunk's and the whole file's XXH3, acknowledges as the host does, and stores nothing: the link alone, as iperf3 measures the network"
        result["linkVsIperf3"] = iperf.map { linkMBps / $0 } as Any? ?? "iperf3 not installed"
        result["iperf3OnBulkCoresMBps"] =
            iperfPinned as Any? ?? (iperf == nil ? "iperf3 not installed" : "one core: bulk is not confined")
        result["iperf3OnBulkCoresNote"] =
            "iperf3 with client and server pinned to the cores ppc's bulk threads may use (\(spare.map(String.init).joined(separator: ","))): the like-for-like reference, since ppc keeps core \(ThreadPriority.allowedCores(ofProcess: true).first ?? 0) free of bulk so control never waits for a CPU"
        result["linkVsIperf3OnBulkCores"] = iperfLike.map { linkMBps / $0 } as Any? ?? "iperf3 not installed"
        result["controlRttUnderLinkOnlyUs"] = [
            "p50": percentile(bare.control, 0.5), "p99": percentile(bare.control, 0.99), "n": bare.control.count,
        ]
        result["bulkNote"] =
            "\(bulkMB) MB in \(stored.chunkBytes >> 10) KiB chunks, \(max(stored.chunkBytes >> 10, windowKiB)) KiB unacknowledged at most, each chunk verified, written to the host's file and logged before its ack, the file fsynced once when whole and verified (resumable; library in \(dir))"
        result["storageCeilingMBps"] = storageMBps
        result["storageNote"] =
            "the same bytes written to a fresh file on the library's filesystem in 1 MiB writes, written back as the host writes back chunks, and fsynced once: what storing costs without a network"
        result["bulkVsCeiling"] = bulkMBps / min(storageMBps, iperf ?? storageMBps)
        result["iperf3MBps"] = iperf as Any? ?? "not installed (Debian: iperf3)"
        result["clockOffsetErrorUs"] = [
            "p50": percentile(offsetErrors, 0.5), "p95": percentile(offsetErrors, 0.95),
            "max": percentile(offsetErrors, 1.0),
            "statedBoundP50": percentile(bounds, 0.5), "withinOwnBound": "\(withinBound) of \(offsetErrors.count)",
        ]
        result["skewErrorPpm"] = skewError as Any? ?? "not measurable"
        result["skewSeconds"] = skewSeconds
        result["devicesHeldAtControlP99Le10ms"] = [
            "devices": held, "p99Us": heldP99, "tried": "4, 8, 16, 32, 64 at 20 Hz heartbeats",
        ]
        result["shapedLink"] = shaped
        result["encryptedLoopback"] =
            [
                "linkBulkMBps": linkSecureMBps, "vsPlaintext": linkSecureMBps / linkMBps,
                "controlRttUs": [
                    "idle": [
                        "p50": percentile(idleSecure, 0.5), "p99": percentile(idleSecure, 0.99), "n": idleSecure.count,
                    ],
                    "underLinkOnly": [
                        "p50": percentile(bareSecure.control, 0.5), "p99": percentile(bareSecure.control, 0.99),
                        "n": bareSecure.control.count,
                    ],
                ],
                "cpuSecondsPerGB": ["encrypted": cpuSecurePerGB, "plaintext": cpuPlainPerGB],
                "note":
                    "over loopback both ends are this process and these 2 cores, so this measures CPU: sealing, opening and a copy per record where plaintext sends the file by sendfile; the network figure is the shaped link's",
            ] as [String: Any]
        result["targets"] = [
            "underBulkP99Ms": 5, "underBulkP99VsIdle": 2, "offsetErrorP95Us": 5, "skewErrorPpm": 0.1, "devices": 32,
            // Bulk against iperf3 is judged where a network is the bottleneck, as iperf3 means it: across the shaped
            // link. Over loopback both measure this machine's CPUs, of which ppc leaves one to control on purpose.
            "shapedLink.linkVsIperf3": 0.5, "shapedLink.bulkVsIperf3": 0.5, "shapedLink.underStoredBulkP99VsIdle": 2,
            "shapedLink.encrypted.vsPlaintext": 0.9, "shapedLink.encrypted.underBulkP99VsIdle": 2,
        ]
        try BenchCommand.emit(
            result, json: inv.flag("json"),
            lines: [
                String(
                    format:
                        "control RTT idle p50 %.0f µs, p99 %.0f µs; under bulk p50 %.0f µs, p99 %.0f µs (target p99 ≤ 5 ms and ≤ 2× idle)",
                    percentile(idle, 0.5), percentile(idle, 0.99), percentile(busy, 0.5), percentile(busy, 0.99)),
                String(
                    format:
                        "link alone (verified, not stored, %d KiB chunks) %.0f MB/s%@%@; control RTT meanwhile p50 %.0f µs, p99 %.0f µs",
                    bare.chunkBytes >> 10, linkMBps,
                    iperf.map { String(format: ", %.2f of iperf3 on every core (%.0f MB/s)", linkMBps / $0, $0) } ?? "",
                    iperfPinned.map {
                        String(
                            format:
                                ", %.2f of iperf3 on the bulk cores (%.0f MB/s; loopback measures CPUs: the target is judged across the shaped link)",
                            linkMBps / $0, $0)
                    } ?? "", percentile(bare.control, 0.5), percentile(bare.control, 0.99)),
                String(
                    format:
                        "bulk %.0f MB/s, stored and verified%@; the library's filesystem alone takes %.0f MB/s (written back as the host does, one fsync), so bulk is %.2f of what storage allows",
                    bulkMBps,
                    iperf.map {
                        String(format: " (%.2f of iperf3: storing, not the link, is the bound)", bulkMBps / $0)
                    } ?? "", storageMBps, bulkMBps / min(storageMBps, iperf ?? storageMBps)),
                String(
                    format:
                        "clock offset error p50 %.1f µs, p95 %.1f µs (stated bound p50 %.1f µs; %d of %d within their own bound; target p95 ≤ 5 µs)",
                    percentile(offsetErrors, 0.5), percentile(offsetErrors, 0.95), percentile(bounds, 0.5), withinBound,
                    offsetErrors.count),
                shapedLine(shaped, mbit: networkMbit),
                String(
                    format:
                        "encrypted over loopback: link alone %.0f MB/s (%.2f of plaintext), control p99 idle %.0f µs, under it %.0f µs; CPU %.2f s/GB encrypted vs %.2f s/GB plaintext (both ends)",
                    linkSecureMBps, linkSecureMBps / linkMBps, percentile(idleSecure, 0.99),
                    percentile(bareSecure.control, 0.99), cpuSecurePerGB, cpuPlainPerGB),
                skewError.map {
                    String(format: "skew error %.3f ppm after %.0f s (target ≤ 0.1 ppm after 20 s)", $0, skewSeconds)
                } ?? "skew not measurable",
                "devices held at control p99 ≤ 10 ms: \(held) (p99 \(String(format: "%.0f", heldP99)) µs; target ≥ 32)",
            ])
        return .success
    }

    /// The shaped-link stage in one line.
    static func shapedLine(_ r: [String: Any], mbit: Int) -> String {
        guard r["measured"] as? Bool == true, let c = r["controlRttUs"] as? [String: [String: Any]] else {
            return "across a shaped link: not measured (\(r["why"] ?? "?"))"
        }
        func p(_ k: String, _ q: String) -> Double { (c[k]?[q] as? Double) ?? .nan }
        let stored = r["bulkMBps"] as? Double ?? .nan
        let link = r["linkBulkMBps"] as? Double ?? .nan
        let iperf = r["iperf3MBps"] as? Double
        let vs = { (x: Double) in iperf.map { String(format: " (%.2f of iperf3)", x / $0) } ?? "" }
        let resent = r["tcpSegmentsResent"] as? [String: Int] ?? [:]
        return String(
            format:
                "across a %d Mbit/s link (%@): iperf3 %@; link alone %.0f MB/s%@; stored bulk %.0f MB/s%@ (target ≥ 0.5); control RTT idle p50 %.0f µs, p99 %.0f µs; under stored bulk p50 %.0f µs, p99 %.0f µs; under link alone p99 %.0f µs; TCP segments resent: %d stored, %d link alone",
            mbit, (r["link"] as? String) ?? "", iperf.map { String(format: "%.0f MB/s", $0) } ?? "not installed", link,
            vs(link), stored, vs(stored),
            p("idle", "p50"), p("idle", "p99"), p("underStoredBulk", "p50"), p("underStoredBulk", "p99"),
            p("underLinkOnly", "p99"),
            resent["storedBulk"] ?? 0, resent["linkOnly"] ?? 0)
            + ((r["encrypted"] as? [String: Any]).map { e in
                let rtt = e["controlRttUs"] as? [String: [String: Any]] ?? [:]
                return String(
                    format:
                        "; encrypted: link alone %.0f MB/s, %.2f of plaintext (target ≥ 0.9), control p99 idle %.0f µs, under it %.0f µs (%.1f×, target ≤ 2×)",
                    e["linkBulkMBps"] as? Double ?? .nan, e["vsPlaintext"] as? Double ?? .nan,
                    rtt["idle"]?["p99"] as? Double ?? .nan,
                    rtt["underLinkOnly"]?["p99"] as? Double ?? .nan, e["underBulkP99VsIdle"] as? Double ?? .nan)
            } ?? "")
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
