import CLI
import Crypto
import Foundation
import Syscall
import Transfer

/// A device and a host on two sides of a real link: two network namespaces joined by a veth pair whose egress, each
/// way, is shaped by a token bucket to a named rate, with this machine's default queueing discipline under it (what a
/// device's network interface has). Loopback measures CPUs; this measures what the link does when the network, not
/// the CPU, is the bottleneck — a hitting bay's Ethernet. Made with `ip` and `tc`; needs root. Torn down by `remove()`.
final class ShapedLink: @unchecked Sendable {
    // @unchecked: immutable after init.
    let deviceNamespace: String
    let hostNamespace: String
    let deviceAddress = "10.77.0.1"
    let hostAddress = "10.77.0.2"
    /// What queues under the token bucket: this machine's `net.core.default_qdisc`.
    let queueing: String

    /// Makes the namespaces and the link, or throws saying which command failed and what it printed.
    init(megabitsPerSecond: Int) throws {
        Self.removeLeftovers()
        let tag = "\(getpid())"
        deviceNamespace = "ppc-device-\(tag)"
        hostNamespace = "ppc-host-\(tag)"
        queueing = ((try? String(contentsOfFile: "/proc/sys/net/core/default_qdisc", encoding: .utf8)) ?? "pfifo_fast")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let (d, h) = ("ppcd\(tag)", "ppch\(tag)")
        // The token bucket holds at least one 64 KiB GSO segment and 4 ms of traffic; what waits beyond that queues
        // in the child discipline, as it would in a device's transmit queue.
        let burstBytes = max(96 << 10, megabitsPerSecond * 1_000_000 / 8 / 250)
        var steps: [[String]] = [
            ["ip", "netns", "add", deviceNamespace], ["ip", "netns", "add", hostNamespace],
            [
                "ip", "link", "add", d, "netns", deviceNamespace, "type", "veth", "peer", "name", h, "netns",
                hostNamespace,
            ],
        ]
        for (ns, dev, addr) in [(deviceNamespace, d, deviceAddress), (hostNamespace, h, hostAddress)] {
            steps += [
                ["ip", "-n", ns, "addr", "add", "\(addr)/24", "dev", dev], ["ip", "-n", ns, "link", "set", dev, "up"],
                ["ip", "-n", ns, "link", "set", "lo", "up"],
                [
                    "tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "tbf", "rate",
                    "\(megabitsPerSecond)mbit",
                    "burst", "\(burstBytes)", "latency", "50ms",
                ],
                ["tc", "-n", ns, "qdisc", "add", "dev", dev, "parent", "1:1", queueing],
            ]
        }
        do {
            for s in steps { try Self.run(s) }
        } catch {
            remove()
            throw error
        }
    }

    /// Deletes the namespaces of benches that were killed before they could (their process is gone).
    static func removeLeftovers() {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/run/netns")) ?? [] {
            guard name.hasPrefix("ppc-device-") || name.hasPrefix("ppc-host-"),
                let pid = Int32(name.split(separator: "-").last ?? ""),
                !ProcessSignal.isAlive(pid)
            else { continue }
            try? run(["ip", "netns", "delete", name])
        }
    }

    /// Deletes both namespaces (the veth pair goes with them).
    func remove() {
        for ns in [deviceNamespace, hostNamespace] { try? Self.run(["ip", "netns", "delete", ns]) }
    }

    static func run(_ argv: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/sbin/\(argv[0])")
        p.arguments = Array(argv.dropFirst())
        let err = Pipe()
        p.standardOutput = FileHandle.nullDevice
        p.standardError = err
        do { try p.run() } catch { throw CommandFailure.failure("\(argv.joined(separator: " ")): \(error)") }
        let said = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw CommandFailure.failure(
                "\(argv.joined(separator: " ")): exit \(p.terminationStatus): \(said.trimmingCharacters(in: .whitespacesAndNewlines))"
            )
        }
    }

    /// Runs `body` on a thread of its own inside `namespace` (threads it starts stay there too) and returns its result.
    func inside<T>(_ namespace: String, _ body: @escaping @Sendable () throws -> T) throws -> T {
        let box = ResultBox<T>()
        Thread {
            box.result = Result {
                try Descriptor.enterNetworkNamespace("/run/netns/\(namespace)")
                return try body()
            }
            box.done.signal()
        }.start()
        box.done.wait()
        return try box.result!.get()
    }
}

extension BenchLink {
    /// The shaped-link stage: iperf3, the link alone, stored bulk, and control round trips idle and under that bulk,
    /// all between the two namespaces of one `ShapedLink`.
    static func acrossShapedLink(
        megabitsPerSecond: Int, bundle: String, bulkMB: Int, chunkKiB: Int?, windowKiB: Int, library: String
    ) -> [String: Any] {
        let net: ShapedLink
        do {
            net = try ShapedLink(megabitsPerSecond: megabitsPerSecond)
        } catch {
            return [
                "measured": false, "why": "no shaped link could be made (needs root, iproute2's ip and tc): \(error)",
            ]
        }
        defer { net.remove() }
        do {
            let host = net.hostAddress
            let server = try net.inside(net.hostNamespace) {
                let s = try HostServer(host: host, port: 0, library: library, policy: .any, security: Keys.hostSecurity)
                Thread { _ = s.run() }.start()
                return s
            }
            defer { server.stop() }
            let linkOnly = try net.inside(net.hostNamespace) {
                let r = try LinkOnlyReceiver(host: host, security: Keys.hostSecurity)
                Thread { r.run() }.start()
                return r
            }
            defer { linkOnly.stop() }
            let iperf = try iperf3MBps(pinned: nil, across: net)
            let port = server.port
            let idle = try net.inside(net.deviceNamespace) {
                try controlRTTs(host: host, port: port, device: "idle", count: 1000, gapNs: 1_000_000)
            }
            // Each transfer with the segments the device's TCP sent again meanwhile: a loss at the link's queue costs a
            // retransmission, and a lost chunk tail a timeout, which this makes visible rather than guessed.
            let linkPort = linkOnly.port
            let (stored, resentStored) = try net.inside(net.deviceNamespace) {
                let before = Self.retransmittedSegments()
                let r = try bulkUnderControl(
                    host: host, port: port, bundle: bundle, chunkKiB: chunkKiB, windowKiB: windowKiB)
                return (r, Self.retransmittedSegments() - before)
            }
            let (bare, resentBare) = try net.inside(net.deviceNamespace) {
                let before = Self.retransmittedSegments()
                let r = try bulkUnderControl(
                    host: host, port: linkPort, bundle: bundle, chunkKiB: chunkKiB, windowKiB: windowKiB,
                    controlPort: port)
                return (r, Self.retransmittedSegments() - before)
            }
            // The link alone again, encrypted: the same bytes, sealed per record, across the same shaped link.
            let (bareSecure, resentSecure) = try net.inside(net.deviceNamespace) {
                let before = Self.retransmittedSegments()
                let r = try bulkUnderControl(
                    host: host, port: linkPort, bundle: bundle, chunkKiB: chunkKiB, windowKiB: windowKiB,
                    controlPort: port, secure: true)
                return (r, Self.retransmittedSegments() - before)
            }
            let idleSecure = try net.inside(net.deviceNamespace) {
                try controlRTTs(host: host, port: port, device: "idle", count: 1000, gapNs: 1_000_000, secure: true)
            }
            let storedMBps = Double(bulkMB) / stored.seconds
            let linkMBps = Double(bulkMB) / bare.seconds
            let linkSecureMBps = Double(bulkMB) / bareSecure.seconds
            var out: [String: Any] = [
                "measured": true,
                "link":
                    "veth between two network namespaces, each way shaped to \(megabitsPerSecond) Mbit/s (tbf) over \(net.queueing), this machine's default queueing",
                "controlRttUs": [
                    "idle": ["p50": percentile(idle, 0.5), "p99": percentile(idle, 0.99), "n": idle.count],
                    "underStoredBulk": [
                        "p50": percentile(stored.control, 0.5), "p99": percentile(stored.control, 0.99),
                        "n": stored.control.count,
                    ],
                    "underLinkOnly": [
                        "p50": percentile(bare.control, 0.5), "p99": percentile(bare.control, 0.99),
                        "n": bare.control.count,
                    ],
                ],
                "bulkMBps": storedMBps, "linkBulkMBps": linkMBps, "chunkKiB": stored.chunkBytes >> 10,
                "iperf3MBps": iperf as Any? ?? "not installed (Debian: iperf3)",
                "tcpSegmentsResent": [
                    "storedBulk": resentStored, "linkOnly": resentBare, "linkOnlyEncrypted": resentSecure,
                ],
                "encrypted": [
                    "linkBulkMBps": linkSecureMBps, "vsPlaintext": linkSecureMBps / linkMBps,
                    "controlRttUs": [
                        "idle": [
                            "p50": percentile(idleSecure, 0.5), "p99": percentile(idleSecure, 0.99),
                            "n": idleSecure.count,
                        ],
                        "underLinkOnly": [
                            "p50": percentile(bareSecure.control, 0.5), "p99": percentile(bareSecure.control, 0.99),
                            "n": bareSecure.control.count,
                        ],
                    ],
                    "underBulkP99VsIdle": percentile(bareSecure.control, 0.99)
                        / max(1e-9, percentile(idleSecure, 0.99)),
                    "how":
                        "the same transfer over the encrypted link (IK handshake, XChaCha20-Poly1305 secretstream per record), paired in memory",
                ] as [String: Any],
            ]
            if let iperf {
                out["bulkVsIperf3"] = storedMBps / iperf
                out["linkVsIperf3"] = linkMBps / iperf
            }
            return out
        } catch {
            return ["measured": false, "why": "\(error)"]
        }
    }
}

extension BenchLink {
    /// The calling thread's network namespace's TCP RetransSegs (`/proc/thread-self/net/snmp`); 0 when unreadable.
    static func retransmittedSegments() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/thread-self/net/snmp", encoding: .utf8) else { return 0 }
        let rows = text.split(separator: "\n").filter { $0.hasPrefix("Tcp:") }.map { $0.split(separator: " ") }
        guard rows.count == 2, let i = rows[0].firstIndex(of: "RetransSegs"), i < rows[1].count else { return 0 }
        return Int(rows[1][i]) ?? 0
    }
}

/// A result handed from one thread to another.
final class ResultBox<T>: @unchecked Sendable {
    // @unchecked: written by the producing thread before it signals `done`, read after.
    var result: Result<T, any Error>?
    let done = DispatchSemaphore(value: 0)
}
