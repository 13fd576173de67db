import Capture
import Foundation
import FragmentRing
import JSONInput
import PayloadSource
import Pipeline
import Syscall

/// A clip minted (its bundle staged, written whole) and waiting for its sinks.
struct Delivery {
    var shot: DetectedImpact
    var clipID: String
    var staging: String
    var window: SwingWindow<RingPayloadSource>
    var clip: ClipMinter.Clip
    /// CLOCK_MONOTONIC when its mint began and when its bundle was staged whole.
    var mintStartNs: Int64
    var mintedNs: Int64
}

/// The delivery thread's stage: each minted clip handed to every sink, in mint order, and an account kept of what a sink
/// still owes (`OUT/pins/<clipId>.json` records the ring pin held for a clip waiting in the outbox; `OwedPins`).
struct Deliverer {
    unowned let runner: SessionRunner

    /// Hands each minted clip to every sink, in mint order, until the mint thread is done and nothing is queued. What a
    /// sink still owes (this session's clips or an earlier one's) is sent when deliveries begin, after each clip every
    /// sink confirmed (the host is evidently there), and every `link.owedRetryIntervalNs` while this session owes a clip
    /// or a sink has lost its host (which also brings its link back: events and preview).
    func run() {
        ThreadPriority.lowerCurrent()
        let senders = runner.roles.owedSenders.map(\.sender)
        sendOwed()
        let live = RingPayloadSource(ring: runner.ring, index: runner.index)
        while true {
            runner.lock.lock()
            var retryOwed = false
            // One deadline for the whole wait: the condition is broadcast after every fragment, so a deadline taken
            // afresh at each wake-up would never come.
            let retryAt = Date(timeIntervalSinceNow: Double(runner.components.config[.owedRetryIntervalNs]) / 1e9)
            while runner.deliveries.isEmpty && runner.looks.isEmpty && !runner.mintingDone {
                if runner.owed.isEmpty && !senders.contains(where: \.needsRetry) {
                    runner.lock.wait()
                } else if !runner.lock.wait(until: retryAt) {
                    retryOwed = true
                    break
                }
            }
            if retryOwed {
                runner.lock.unlock()
                sendOwed()
                continue
            }
            // A first look goes before any clip: it is worth only its speed, and it is small.
            if !runner.looks.isEmpty {
                let look = runner.looks.removeFirst()
                runner.lock.unlock()
                FirstLookStage(runner: runner).deliverLook(look)
                continue
            }
            guard !runner.deliveries.isEmpty else {
                runner.lock.unlock()
                return
            }
            let next = runner.deliveries.removeFirst()
            runner.lock.unlock()
            do {
                if let clip = try deliver(next, live: live) {
                    runner.lock.lock()
                    runner.clips.append(clip)
                    let anythingOwed = !runner.owed.isEmpty
                    runner.lock.unlock()
                    if anythingOwed { sendOwed() }
                }
            } catch {
                runner.lock.lock()
                runner.mintFailures.append("shot \(next.shot.id) at t0 \(next.shot.t0Ns) ns: \(error)")
                runner.lock.unlock()
            }
        }
    }

    /// Has every sink that keeps owed clips send them, and settles what the host confirmed: this session's clip counts
    /// as delivered once every sink has it, and each confirmed clip's recorded pin is released.
    func sendOwed() {
        for (index, sender) in runner.roles.owedSenders {
            // A stop asked for "now" sends no more of the backlog: what is owed waits in the outbox.
            let confirmed = sender.sendOwed { runner.stop.atNs.load(ordering: .relaxed) != .min }
            guard !confirmed.isEmpty else { continue }
            let records = OwedPins.records(out: runner.options.context.outputDirectory)
            for clipID in confirmed {
                OwedPins.releasePin(
                    ofDelivered: clipID, records: records, ring: runner.ring,
                    out: runner.options.context.outputDirectory)
                runner.lock.lock()
                if let i = runner.owed.firstIndex(where: { $0.clipID == clipID }) {
                    runner.owed[i].waitingFor.remove(index)
                    if runner.owed[i].waitingFor.isEmpty {
                        var clip = runner.owed.remove(at: i).minted
                        clip.confirmedBy.append("\(type(of: sender)): sent from the outbox after it was owed")
                        runner.clips.append(clip)
                    }
                }
                runner.lock.unlock()
            }
        }
    }

    /// Hands one clip to every sink: the clip when all confirmed it, nil when it is owed (recorded, its pin kept).
    func deliver(_ d: Delivery, live: RingPayloadSource) throws -> SessionRunner.MintedClip? {
        // The pin is released when every sink has confirmed, or when no bundle ever reached a sink; otherwise the clip
        // is owed: its pin is recorded in OUT/pins/ for the drain.
        var confirmedByAll = false
        var handedToSinks = false
        defer {
            if confirmedByAll || !handedToSinks {
                try? live.release(d.window)
            } else if let pin = d.window.pin {
                recordPin(pin, clipID: d.clipID)
                limitOwedPins()
            }
        }
        // Every sink must confirm before the clip counts as delivered (and before its fragments are released).
        // The first sink may move the staged bundle, so later sinks get their own copy first.
        var confirmed: [String] = []
        var refused: [String] = []
        var waitingFor: Set<Int> = []
        var delivered = d.staging
        let copies = try (1..<max(1, runner.components.sinks.count)).map { try copyAside(d.staging, $0) }
        handedToSinks = true
        for (i, sink) in runner.components.sinks.enumerated() {
            do {
                let path = try sink.deliver(staged: i == 0 ? d.staging : copies[i - 1], clipID: d.clipID)
                if i == 0 { delivered = path }
                confirmed.append(path)
            } catch {
                refused.append("\(type(of: sink)): \(error)")
                waitingFor.insert(i)
            }
        }
        let bytes =
            ((try? FileManager.default.attributesOfItem(atPath: "\(delivered)/clip.mp4"))?[.size] as? NSNumber)?
            .int64Value ?? 0
        let interval = runner.components.video.format.frameIntervalNs
        let minted = SessionRunner.MintedClip(
            clipID: d.clipID, path: delivered, t0Ns: d.shot.t0Ns, startNs: d.clip.firstFrameNs,
            endNs: d.clip.firstFrameNs + Int64(d.clip.frames) * interval, frames: d.clip.frames, bytes: bytes,
            confirmedBy: confirmed,
            timing: (d.mintStartNs - d.shot.t0Ns, d.mintedNs - d.shot.t0Ns, monotonicNowNs() - d.shot.t0Ns))
        guard refused.isEmpty else {
            runner.lock.lock()
            runner.owed.append(
                SessionRunner.OwedClip(minted: minted, refusedBy: refused, shotID: d.shot.id, waitingFor: waitingFor))
            runner.lock.unlock()
            return nil
        }
        confirmedByAll = true
        return minted
    }

    /// Owed clips keep at most one ring's worth of fragments pinned (`capacity`), so the disk holds at most twice the
    /// ring while a host is down (derived). Beyond that the oldest owed clips' fragments are let go — their bundles stay
    /// in the outbox, which is the copy the drain sends — and the report says so. A pin no owed clip names (a window
    /// being minted or queued) is never let go here.
    func limitOwedPins() {
        let out = runner.options.context.outputDirectory
        let capacity = runner.ring.configuration.capacity
        guard runner.ring.pinCounts.count > capacity else { return }
        let owed = Dictionary(OwedPins.records(out: out).map { ($1.id, $0) }) { a, _ in a }
        for pin in runner.ring.pins where runner.ring.pinCounts.count > capacity {
            guard let clipID = owed[pin.id], (try? runner.ring.unpin(pin)) != nil else { continue }
            try? FileManager.default.removeItem(atPath: OwedPins.recordPath(out: out, clipID: clipID))
            runner.lock.lock()
            runner.policyNotes.append(
                "\(clipID): its ring fragments \(pin.first)…\(pin.last) let go while it is owed (owed clips would pin more than the ring's \(capacity) fragments); its bundle waits in the outbox for the host"
            )
            runner.lock.unlock()
        }
    }

    /// Writes `OUT/pins/<clipId>.json` so a later `ppc-tool transfer drain` can release the pin on confirmation.
    func recordPin(_ pin: PinToken, clipID: String) {
        let out = runner.options.context.outputDirectory
        try? FileSystem.makeDirectory(OwedPins.directory(out: out))
        let record: [String: Any] = [
            "pinId": pin.id, "first": pin.first.rawValue, "last": pin.last.rawValue, "clipId": clipID,
        ]
        if let data = try? JSONSerialization.data(withJSONObject: record, options: [.sortedKeys]) {
            try? data.write(to: URL(fileURLWithPath: OwedPins.recordPath(out: out, clipID: clipID)))
        }
    }

    func copyAside(_ path: String, _ n: Int) throws -> String {
        let copy = "\(path).copy\(n)"
        try? FileManager.default.removeItem(atPath: copy)
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        return copy
    }
}

/// The pins held for clips owed to a host, recorded in `OUT/pins/<clipId>.json` so a later `ppc-tool transfer drain`
/// (another process) can release each on the host's confirmation, and a new session can tell a pin it must keep from
/// one a killed run left.
public enum OwedPins {
    /// Releases every pin of `ring` that no owed clip names — a record in `OUT/pins/<clipId>.json` (written for each
    /// clip owed to a host) whose clip is still in the outbox; returns their ids. A record whose clip has left the
    /// outbox (an earlier session's network sink delivered it) goes too.
    static func releaseUnowned(_ ring: FragmentRing, out: String) -> [UInt64] {
        var owned: Set<UInt64> = []
        for (clipID, pin) in records(out: out) {
            if FileSystem.exists("\(SessionContext.outboxDirectory(out: out))/\(clipID)") {
                owned.insert(pin.id)
            } else {
                try? FileManager.default.removeItem(atPath: recordPath(out: out, clipID: clipID))
            }
        }
        var released: [UInt64] = []
        for pin in ring.pins where !owned.contains(pin.id) {
            if (try? ring.unpin(pin)) != nil { released.append(pin.id) }
        }
        return released
    }

    /// The pins recorded for owed clips (`OUT/pins/<clipId>.json`), by clip id; a record that does not read is skipped.
    public static func records(out: String) -> [String: PinToken] {
        let dir = directory(out: out)
        var records: [String: PinToken] = [:]
        for name in (try? FileSystem.list(dir)) ?? [] where name.hasSuffix(".json") {
            guard
                let data = (try? FileSystem.readSmallFile("\(dir)/\(name)", limit: 1 << 16, regularFileOnly: true)).map(
                    { Data($0) }),
                let record = try? JSONInput.object(data),
                let id = (record["pinId"] as? NSNumber)?.uint64Value,
                let first = (record["first"] as? NSNumber)?.uint64Value,
                let last = (record["last"] as? NSNumber)?.uint64Value
            else { continue }
            records[String(name.dropLast(".json".count))] = PinToken(
                id: id, first: SequenceNumber(first), last: SequenceNumber(last))
        }
        return records
    }

    static func directory(out: String) -> String { "\(out)/pins" }
    static func recordPath(out: String, clipID: String) -> String { "\(directory(out: out))/\(clipID).json" }

    /// The host confirmed `clipID`: the pin recorded for it (in `records`, as `records` read them) is released and
    /// its record goes. Nothing when none was recorded; no ring (it would not open) releases only the record.
    public static func releasePin(
        ofDelivered clipID: String, records: [String: PinToken], ring: FragmentRing?, out: String
    ) {
        guard let pin = records[clipID] else { return }
        try? ring?.unpin(pin)
        try? FileManager.default.removeItem(atPath: recordPath(out: out, clipID: clipID))
    }
}
