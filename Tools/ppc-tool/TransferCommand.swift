import CLI
import Config
import Foundation
import FragmentRing
import JSONInput
import Link
import Pairing
import PayloadSource
import Session
import Syscall
import Transfer

/// `ppc-tool transfer status|drain OUT`: clips a session could not deliver to its host, and delivering them.
enum TransferCommand {
    static let command = Command(
        "transfer", abstract: "Clips owed to a host (OUT/outbox): list them, or deliver them now.",
        subcommands: [
            Command(
                "status",
                abstract:
                    "List the clips waiting in OUT/outbox and the ring pins held for them; name any damaged since it was minted (exit 65).",
                options: [jsonFlag], arguments: [Argument("out", help: "A run's output directory.")], run: status),
            Command(
                "drain",
                abstract:
                    "Send every waiting clip to a host; each leaves the outbox (and its pin is released) when confirmed. One damaged since it was minted is kept, not sent (exit 65).",
                options: [
                    .value("host", "host:port", help: "The ppc-host."),
                    .value(
                        "device-id", "id",
                        help: "This device's name (default: the device named in the clips' meta.json)."),
                    .value(
                        "state", "dir", help: "This device's identity and pinned hosts (default $XDG_STATE_HOME/ppc)."),
                    .flag("insecure-loopback-only", help: "Plaintext to a loopback host, for benches and tests."),
                    jsonFlag,
                ],
                arguments: [Argument("out", help: "A run's output directory.")], run: drain),
        ])

    static func status(_ inv: Invocation) throws -> ExitCode {
        let out = inv.argument(0)!
        try requireRunOutput(out)
        let outbox = try? Outbox(directory: "\(out)/outbox")
        let pending = outbox?.pending ?? []
        let held = OwedPins.records(out: out)
        // Each owed bundle checked against what meta.json recorded at its mint: one damaged since is never sent.
        let damaged = pending.compactMap { clip in
            outbox.flatMap { ClipMeta.bundleProblem($0.path(of: clip), clipID: clip) }.map { (clip: clip, why: $0) }
        }
        if inv.flag("json") {
            try printJSON([
                "outbox": pending,
                "pins": held.mapValues { ["id": $0.id, "first": $0.first.rawValue, "last": $0.last.rawValue] },
                "damaged": damaged.map { ["clipId": $0.clip, "why": $0.why] },
            ])
        } else {
            Terminal.out(
                "\(out): \(pending.count) clips waiting for a host\(pending.isEmpty ? "" : ": " + pending.joined(separator: ", ")); \(held.count) ring pins held for unconfirmed clips"
            )
            for d in damaged {
                Terminal.err("\(d.clip): damaged since it was minted, not sent until it is whole again: \(d.why)")
            }
        }
        return damaged.isEmpty ? .success : .dataError
    }

    static func drain(_ inv: Invocation) throws -> ExitCode {
        let out = inv.argument(0)!
        guard let target = inv.value("host") else {
            throw CommandFailure.usage("transfer drain: --host HOST:PORT is required")
        }
        let endpoint = try Endpoint(target, option: "host")
        let (host, port) = (endpoint.host, endpoint.port)
        try requireRunOutput(out)
        let hold = try holdOutputDirectory(out, purpose: "ppc-tool transfer drain")
        defer { hold.release() }
        let outbox: Outbox
        do { outbox = try Outbox(directory: "\(out)/outbox") } catch {
            throw CommandFailure.dataError("\(out)/outbox: \(error)")
        }
        let pending = outbox.pending
        guard !pending.isEmpty else {
            Terminal.out("\(out): nothing owed")
            return .success
        }
        // The capture profile the host's policy judges comes from the bundles' own meta.json — the first that reads: one
        // damaged bundle must not make the host refuse the device and so every clip behind it.
        // So does the device id the clips were minted under (they go to that device's folder on the host).
        let meta = pending.lazy.compactMap { try? ClipMeta.read("\(outbox.path(of: $0))/meta.json") }.first
        let profile =
            meta.map {
                CaptureProfile(
                    width: $0.captureProfile.width, height: $0.captureProfile.height,
                    framesPerSecond: Double($0.captureProfile.framesPerSecond),
                    codec: $0.captureProfile.codec
                ).description
            } ?? "unknown"
        let mintedBy = meta?.device
        let device = try deviceID(inv, fallback: mintedBy)
        let config = Configuration.defaults
        let link: DeviceLink
        let security: DeviceSecurity?
        do {
            security = try DeviceLinkSecurity.resolve(
                host: host, port: port, stateDirectory: inv.value("state"),
                insecureLoopbackOnly: inv.flag("insecure-loopback-only"))
        } catch { throw CommandFailure.failure("\(error)") }
        do {
            var settings = DeviceLink.Settings(
                host: host, port: port, deviceID: device, captureProfile: profile,
                syncBurst: Int(config[.syncBurstTarget]),
                heartbeatIntervalNs: config[.heartbeatIntervalNs])
            settings.security = security
            settings.connectTimeoutNs = config[.connectTimeoutNs]
            link = try DeviceLink(settings)
            try link.start()
        } catch { throw CommandFailure.failure("\(target): \(error)") }
        defer { link.close(reason: "drain done") }
        let held = OwedPins.records(out: out)
        let ring =
            FileManager.default.fileExists(atPath: "\(out)/ring/ring.json")
            ? try? FragmentRing(
                directory: "\(out)/ring",
                configuration: SessionLayout.ringConfiguration(
                    capacity: ringSettings(out).capacity, fileExtension: ringSettings(out).fileExtension))
            : nil
        var failed = 0
        var damaged = 0
        var results: [[String: Any]] = []
        defer { if inv.flag("json") { try? printJSON(results) } }
        for clip in pending {
            // Each clip's progress is reported whether it arrived or was cut: bytes and chunks sent, where each file resumed.
            let progress = BundleSender.Progress()
            func record(_ delivered: Bool, _ error: String?) {
                var r: [String: Any] = [
                    "clipId": clip, "delivered": delivered, "bytesSent": progress.report.bytesSent,
                    "chunksSent": progress.report.chunksSent,
                    "chunkBytes": progress.report.chunkBytes,
                    "resumedAt": progress.report.resumedAt.mapValues { Int($0) },
                ]
                if let error { r["error"] = error }
                results.append(r)
            }
            do {
                // A bundle damaged since it was minted is not sent (the host would confirm the damage and this copy
                // would be removed): kept, named, and the drain fails.
                _ = try ClipMeta.verifyBundle(outbox.path(of: clip), clipID: clip)
                let report = try BundleSender.send(
                    directory: outbox.path(of: clip), clipID: clip, over: link.bulk, progress: progress)
                record(true, nil)
                try outbox.remove(clip)
                OwedPins.releasePin(ofDelivered: clip, records: held, ring: ring, out: out)
                if !inv.flag("json") { Terminal.out("delivered \(clip) → \(target):\(report.remotePath)") }
            } catch {
                failed += 1
                if (error as? PayloadError)?.code == .badBundle { damaged += 1 }
                record(false, "\(error)")
                Terminal.err(
                    "\(clip): not delivered\((error as? PayloadError)?.code == .badBundle ? ", kept in \(outbox.directory)" : ""): \(error)"
                )
            }
        }
        // 65 when every clip not delivered was damaged on this disk (the host and the link did their part), 1 otherwise.
        return failed == 0 ? .success : failed == damaged ? .dataError : .failure
    }

    /// The ring's own settings, as its ring.json records them.
    static func ringSettings(_ out: String) -> (capacity: Int, fileExtension: String) {
        // Disk state is read, not trusted: a capacity or extension out of bounds falls back to the defaults (opening the
        // ring then refuses the bad ring.json by name, and the clips are delivered all the same).
        guard
            let data = (try? FileSystem.readSmallFile("\(out)/ring/ring.json", limit: 1 << 20, regularFileOnly: true))
                .map({ Data($0) }),
            let o = try? JSONInput.object(data), let c = o["capacity"] as? Int,
            (1...FragmentRing.maxCapacity).contains(c), let ext = o["fileExtension"] as? String,
            PlainName.isPlain(ext, maxLength: 16)
        else { return (Int(Configuration.defaults[.fragmentCapacity]), "ts") }
        return (c, ext)
    }
}
