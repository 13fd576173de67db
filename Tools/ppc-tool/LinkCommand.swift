import CLI
import Config
import Foundation
import Link
import Pairing
import Syscall

/// `ppc-tool link probe HOST:PORT`: measures this machine's clock against a ppc-host.
enum LinkCommand {
    static let command = Command(
        "link", abstract: "Probe a ppc-host: clock offset, round trip, uncertainty, skew.",
        subcommands: [
            Command(
                "probe", abstract: "A sync burst (then more probes) against HOST:PORT; prints the clock relation.",
                options: [
                    jsonFlag,
                    .value(
                        "probes", "n",
                        help:
                            "Sync samples, each the fastest of three exchanges (default: link.syncBurstTarget, then 4× more)."
                    ),
                    .value(
                        "seconds", "s",
                        help: "Spread the probes over this long (skew needs ≥ 2 s; default 0: back to back)."),
                    .value("clock-offset-ns", "ns", help: "Inject a clock offset (tests know the truth)."),
                    .value("clock-skew-ppm", "ppm", help: "Inject a clock skew."),
                    .value("device-id", "id", help: "The id this device was paired as (default probe)."),
                    .value(
                        "state", "dir", help: "This device's identity and pinned hosts (default $XDG_STATE_HOME/ppc)."),
                    .flag("insecure-loopback-only", help: "Plaintext to a loopback host, for benches and tests."),
                ],
                arguments: [Argument("host", help: "HOST:PORT of a ppc-host.")], run: probe)
        ])

    static func probe(_ inv: Invocation) throws -> ExitCode {
        let target = inv.argument(0)!
        let endpoint = try Endpoint(target)
        let (host, port) = (endpoint.host, endpoint.port)
        let burst = Int(Configuration.defaults[.syncBurstTarget])
        let probes = try inv.parsed("probes", in: 1...100_000) ?? burst * 5
        let device = inv.value("device-id") ?? "probe"
        var settings = DeviceLink.Settings(
            host: host, port: port, deviceID: device, captureProfile: "probe", syncBurst: probes,
            heartbeatIntervalNs: Configuration.defaults[.heartbeatIntervalNs])
        settings.connectTimeoutNs = Configuration.defaults[.connectTimeoutNs]
        // a day
        settings.clockOffsetNs = try inv.parsed("clock-offset-ns", in: -86_400_000_000_000...86_400_000_000_000) ?? 0
        settings.clockSkewPpm = try inv.parsed("clock-skew-ppm", in: -1000.0...1000.0) ?? 0
        do {
            settings.security = try DeviceLinkSecurity.resolve(
                host: settings.host, port: port, stateDirectory: inv.value("state"),
                insecureLoopbackOnly: inv.flag("insecure-loopback-only"))
        } catch { throw CommandFailure.failure("\(error)") }
        let control: Connection
        do {
            control = try DeviceLink.open(settings, .control, attempts: 6)
            try control.send(.hello(protocolVersion: 1, deviceID: device, channel: .control, captureProfile: "probe"))
            guard case .helloAck(true, _, _) = try control.receive(timeoutNs: 5_000_000_000) else {
                throw LinkError(.refused, "the host refused the probe")
            }
        } catch { throw CommandFailure.failure("\(target): \(error)") }
        let seconds = try inv.parsed("seconds", in: 0.0...86_400.0) ?? 0
        let gapNs = Int64(seconds * 1e9) / Int64(max(1, probes))
        var estimator = ClockEstimator()
        let clock = InjectedClock(offsetNs: settings.clockOffsetNs, skewPpm: settings.clockSkewPpm)
        var rtts: [Int64] = []
        var sequence: UInt64 = 0
        for _ in 0..<max(1, probes) {
            do {
                let s = try DeviceLink.takeSample(
                    send: { (m: LinkMessage) throws(LinkError) in try control.send(m) },
                    receive: { () throws(LinkError) -> LinkMessage in try control.receive(timeoutNs: 2_000_000_000) },
                    now: clock.now, sequence: &sequence)
                estimator.add(s)
                rtts.append(s.delayNs)
                if gapNs > 0 {  // pacing the probes over --seconds, not a synchronisation
                    sleepNs(gapNs)
                }
            } catch { throw CommandFailure.failure("\(target): \(error)") }
        }
        try? control.send(.bye(reason: "probe done"))
        guard let r = estimator.relation else { throw CommandFailure.failure("no samples") }
        rtts.sort()
        let result: [String: Any] = [
            "host": target, "samples": r.samples, "offsetNs": r.offsetNs, "uncertaintyNs": r.uncertaintyNs,
            "skewPpm": r.skewKnown ? r.skewPpm as Any : NSNull(),
            "skewNote": r.skewKnown
                ? "fitted over the probes' span" : "not measurable: the probes spanned less than 2 s (use --seconds)",
            "rttNs": [
                "min": rtts.first ?? 0, "p50": rtts[rtts.count / 2],
                "p99": rtts[min(rtts.count - 1, rtts.count * 99 / 100)],
            ],
            "meaning": "host time = this clock + offset (± uncertainty); measured",
        ]
        if inv.flag("json") {
            try printJSON(result)
        } else {
            let skew =
                r.skewKnown
                ? "skew \(String(format: "%.3f", r.skewPpm)) ppm"
                : "skew not measurable (probes spanned < 2 s; use --seconds)"
            Terminal.out(
                "\(target): offset \(r.offsetNs) ns ± \(r.uncertaintyNs) ns, \(skew), rtt min \(rtts.first ?? 0) ns / p50 \(rtts[rtts.count / 2]) ns (\(r.samples) probes, measured)"
            )
        }
        return .success
    }
}
