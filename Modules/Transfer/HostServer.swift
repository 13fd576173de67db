import Admission
import Foundation
import Link
import Synchronization
import Syscall

/// What a host measured of a received clip's video, from the file itself.
public struct ClipMeasurement: Sendable, Equatable {
    public var width: Int
    public var height: Int
    /// From the timestamps: (frames − 1) ÷ (last − first presentation time).
    public var framesPerSecond: Double
    public var codec: String
    public var frames: Int

    public init(width: Int, height: Int, framesPerSecond: Double, codec: String, frames: Int) {
        self.width = width
        self.height = height
        self.framesPerSecond = framesPerSecond
        self.codec = codec
        self.frames = frames
    }
}

/// A host's ingest policy: named, local, never on the wire (REQ-CAP-5). A device learns only the policy's name and,
/// if refused, why.
public struct IngestPolicy: Sendable {
    public let name: String
    public let minimumHeight: Int
    public let minimumFPS: Int

    /// ≥ 1080 lines at ≥ 120 fps (seed 000: PinPointStudio's policy).
    public static let pinpointStudio = IngestPolicy(name: "pinpoint-studio", minimumHeight: 1080, minimumFPS: 120)
    /// Anything (tests, labs).
    public static let any = IngestPolicy(name: "any", minimumHeight: 0, minimumFPS: 0)

    public static func named(_ name: String) -> IngestPolicy? { [pinpointStudio, any].first { $0.name == name } }

    /// Why a capture profile `WxH@FPS …` is refused, or nil when accepted: `device` is what the device is told (its own
    /// figure and the policy's name — the floor itself never crosses the wire, REQ-CAP-5), `host` what the host logs
    /// (with the floor).
    /// What a received clip measured (its own file, not the device's word) says against this policy: nil when it meets
    /// it, else "below policy: WxH@fps measured".
    public func verdict(measured m: ClipMeasurement) -> String? {
        guard minimumHeight > 0 || minimumFPS > 0 else { return nil }
        if m.height < minimumHeight || m.framesPerSecond + 0.5 < Double(minimumFPS) {
            return "below policy: \(m.width)x\(m.height)@\(String(format: "%.2f", m.framesPerSecond)) measured"
        }
        return nil
    }

    public func refusal(of profile: String) -> (device: String, host: String)? {
        guard minimumHeight > 0 || minimumFPS > 0 else { return nil }
        guard let p = CaptureProfile(profile) else {
            let why = "capture profile '\(profile)' does not state WxH@FPS"
            return (why, why)
        }
        if p.height < minimumHeight {
            return (
                "\(p.height) lines is below what ingest policy '\(name)' takes",
                "\(p.height) lines is below this host's \(minimumHeight)"
            )
        }
        if p.framesPerSecond < Double(minimumFPS) {
            return (
                "\(p.rateText) fps is below what ingest policy '\(name)' takes",
                "\(p.rateText) fps is below this host's \(minimumFPS)"
            )
        }
        return nil
    }
}

/// `ppc-host`'s engine: many devices at once, each with a control and a bulk connection; each device's clock relation
/// kept; clips received through a ``HostStore``.
public final class HostServer: @unchecked Sendable {
    // @unchecked: `listener` and `store` are immutable; shared state is behind `state`.
    public let listener: Listener
    public let store: HostStore
    public let policy: IngestPolicy
    struct Device {
        var relation: ClockRelation.Report?
        var lastSeenNs: Int64
        var events: Int
        /// Control channels of this device now open: its bulk and preview channels may idle only while one is.
        var controlChannels = 0
        var status: DeviceStatus?
        var lastShotDeviceNs: Int64?
        var lastShotAtNs: Int64?
        var profile = ""
        /// The bay the device says it stands at (`run --bay`), and whether it hears shots itself.
        var claimedBay: String?
        var hears: Bool?
    }

    /// A device's last reported state (the `status` message).
    public struct DeviceStatus: Sendable, Equatable {
        public var armed: Bool
        public var framesPerSecond: Double
        public var framesDropped: UInt64
        public var thermal: String
        public var thermalCelsius: Double?
        public var storageFreeBytes: UInt64
        /// When it arrived, host monotonic ns.
        public var receivedNs: Int64
    }

    /// What a live view shows of one device.
    public struct LiveDevice: Sendable {
        public var id: String
        /// "connected" while a control channel is open, else "disconnected".
        public var link: String
        public var captureProfile: String
        public var relation: ClockRelation.Report?
        public var status: DeviceStatus?
        /// The bay it belongs to (the host's setting, else its own word), and whether it hears shots itself (nil: not said).
        public var bay: String?
        public var hears: Bool?
        /// The last shot: its t0 on the device clock, and on the host clock through the relation (nil without one).
        public var lastShotDeviceNs: Int64?
        public var lastShotHostNs: Int64?
        /// Host monotonic ns when the last shot was heard of.
        public var lastShotAtNs: Int64?
        /// Host monotonic ns of the last message from it.
        public var lastSeenNs: Int64
    }

    /// Something a live view should show at once.
    public enum LiveEvent: Sendable {
        case connected(device: String)
        case disconnected(device: String)
        case status(device: String)
        /// A shot the device heard: its t0 on the host clock through the device's relation (nil without one).
        case shot(device: String, t0HostNs: Int64?)
        case preview(device: String, width: Int, height: Int, luma: [UInt8])
        /// A first look at a shot arrived, ahead of its clip: stored at `path`; its t0 and first frame on the host's
        /// clock (nil without a clock relation).
        case look(
            device: String, clipID: String, path: String, t0HostNs: Int64?, zeroHostNs: Int64?, t0DeviceNs: Int64,
            zeroDeviceNs: Int64)
    }

    /// Called on the connection's thread as each live event happens; must return at once.
    public let onLive: (@Sendable (LiveEvent) -> Void)?

    /// Every device seen since the host started, with its live state.
    public var liveDevices: [LiveDevice] {
        state.withLock { s in
            s.devices.map { id, d in
                let shotHost = d.lastShotDeviceNs.flatMap { t in d.relation.map { t + $0.offsetNs } }
                return LiveDevice(
                    id: id, link: d.controlChannels > 0 ? "connected" : "disconnected", captureProfile: d.profile,
                    relation: d.relation,
                    status: d.status, bay: nil, hears: d.hears, lastShotDeviceNs: d.lastShotDeviceNs,
                    lastShotHostNs: shotHost,
                    lastShotAtNs: d.lastShotAtNs, lastSeenNs: d.lastSeenNs)
            }.sorted { $0.id < $1.id }
        }.map { d in
            var d = d
            d.bay = bay(of: d.id)
            return d
        }
    }
    let state = Guarded<(devices: [String: Device], log: [String])>(([:], []))
    /// Every device's control channel now open, so a stop can say bye on each (`stop(saying:)`).
    let controls = Guarded<[ObjectIdentifier: ControlChannel]>([:])
    /// Tests: cut every bulk connection after this many chunks.
    public let stopBulkAfterChunks: Int?
    /// A control channel silent this long is a dead peer and is closed (three missed heartbeats at link.heartbeatHz).
    public let deadPeerTimeoutNs: Int64
    /// Called with each log line as it happens (ppc-host prints them).
    public let onLog: (@Sendable (String) -> Void)?

    /// Who may connect: paired devices over the encrypted link (plaintext too only when `security.allowPlaintext`).
    public let security: HostSecurity
    /// Measures a received clip.mp4 (ppc-host sets it to libavformat's reading); nil: clips are not measured.
    public let measureClip: (@Sendable (String) -> Result<ClipMeasurement, MeasureError>)?
    /// Why a received bundle's files are not those its own meta.json records (ppc-host sets it to
    /// `ClipMeta.verifyBundle`), or nil when they are; nil: not checked. A ppc device checks before it sends, so a
    /// mismatch means another sender, or a broken one: the clip is kept (every byte verified as sent) and marked.
    public let checkBundle: (@Sendable (String) -> String?)?

    public struct MeasureError: Error, Sendable {
        public let reason: String
        public init(_ reason: String) { self.reason = reason }
    }

    /// What a host is told at its start beside where it listens, what it keeps and whom it takes: what it calls as
    /// things happen, and how it checks what arrives. Every field is fixed for the server's life.
    public struct Options: Sendable {
        /// The bay the host sets for a device (nil: none set; the device's own word then counts).
        public var bays: @Sendable (String) -> String? = { _ in nil }
        /// Called with each newly stored clip's folder (see ``HostStore``); must return at once.
        public var onClipStored: (@Sendable (String) -> Void)?
        /// Called on the connection's thread as each live event happens; must return at once.
        public var onLive: (@Sendable (LiveEvent) -> Void)?
        /// Called with each log line as it happens.
        public var onLog: (@Sendable (String) -> Void)?
        /// Measures a received clip.mp4; nil: clips are not measured.
        public var measureClip: (@Sendable (String) -> Result<ClipMeasurement, MeasureError>)?
        /// Why a received bundle's files are not those its own meta.json records; nil: not checked.
        public var checkBundle: (@Sendable (String) -> String?)?
        /// A control channel silent this long is a dead peer (three missed heartbeats at link.heartbeatHz).
        public var deadPeerTimeoutNs: Int64 = 3_000_000_000
        /// Tests and fault injection: cut every bulk connection after this many chunks.
        public var stopBulkAfterChunks: Int?

        public init() {}
    }

    public init(
        host: String, port: Int, library: String, policy: IngestPolicy, security: HostSecurity,
        pending: PendingConnections = PendingConnections(), options: Options = Options()
    ) throws {
        bays = options.bays
        onLive = options.onLive
        onLog = options.onLog
        measureClip = options.measureClip
        checkBundle = options.checkBundle
        deadPeerTimeoutNs = options.deadPeerTimeoutNs
        stopBulkAfterChunks = options.stopBulkAfterChunks
        self.security = security
        listener = try Listener(host: host, port: port)
        self.pending = pending
        store = try HostStore(library: library, onClipStored: options.onClipStored)
        self.policy = policy
    }

    public var port: Int { listener.port }

    /// The bay the host sets for a device (nil: none set; the device's own word then counts).
    let bays: @Sendable (String) -> String?

    /// The bay `device` belongs to: the host's setting, else what the device said (`run --bay`), else none.
    public func bay(of device: String) -> String? {
        if let set = bays(device), !set.isEmpty { return set }
        return state.withLock { $0.devices[device]?.claimedBay }.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Shots relayed to bay-mates so far (numbered for the devices).
    let relayed = Atomic<UInt64>(0)

    /// A shot `source` heard, sent to every other device of its bay whose control channel is up, on that device's own
    /// clock: host time = source time + the source's offset = mate time + the mate's offset, as uncertain as both
    /// relations together. A device without a relation yet cannot be told when (and is not); a device that heard the
    /// shot too mints one clip of it, not two (it merges a relayed shot with its own).
    func relay(shotAt t0: Int64, from source: String) {
        guard let bay = bay(of: source) else { return }
        let (sourceRelation, mates) = state.withLock { s in
            (
                s.devices[source]?.relation,
                s.devices.filter { $0.key != source && $0.value.controlChannels > 0 }.map {
                    ($0.key, $0.value.relation)
                }
            )
        }
        guard let from = sourceRelation else { return }
        let channels = controls.withLock { Array($0.values) }
        for (mate, relation) in mates where self.bay(of: mate) == bay {
            guard let to = relation else {
                note("shot of \(source) not relayed to \(mate): no clock relation from \(mate) yet")
                continue
            }
            let (hostT0, o1) = t0.addingReportingOverflow(from.offsetNs)
            let (mateT0, o2) = hostT0.subtractingReportingOverflow(to.offsetNs)
            guard !o1, !o2, mateT0.magnitude < DeviceLink.largestTimeNs.magnitude else { continue }
            let id = relayed.add(1, ordering: .relaxed).newValue
            let uncertainty = from.uncertaintyNs.addingReportingOverflow(to.uncertaintyNs).partialValue
            for channel in channels where channel.device == mate {
                try? channel.send(.relayedShot(id: id, t0Ns: mateT0, uncertaintyNs: uncertainty, from: source))
            }
            note("shot of \(source) relayed to \(mate) (bay \(bay)), ± \(uncertainty) ns")
        }
    }

    /// What happened, one line each (accepted, refused, closed and why).
    public var log: [String] { state.withLock { $0.log } }

    func note(_ line: String) {
        state.withLock { s in
            s.log.append(line)
            if s.log.count > Self.logLines { s.log.removeFirst(s.log.count - Self.logLines / 2) }
        }
        onLog?(line)
    }

    /// The most lines `log` keeps (the newest; older ones went to `onLog` as they happened).
    static let logLines = 4_000

    /// Each device's clock relation as last reported.
    public var relations: [String: ClockRelation.Report] {
        state.withLock { s in s.devices.compactMapValues { $0.relation } }
    }

    /// How `run` ended.
    public enum RunEnd: Sendable {
        /// `stop()` was called.
        case stopped
        /// The listening socket failed for good: the host can take no more connections.
        case failed(LinkError)
    }

    /// Connections that have not finished their handshake, bounded per peer address and overall (see
    /// `PendingConnections`): 1 100 silent connections once took every descriptor a 1 024 limit gives.
    public let pending: PendingConnections

    /// Accepts connections until `stop()`, each served on its own thread; when too many are pending, the one silent
    /// longest is closed to make room, and said (throttled). A passing accept error (out of descriptors, a peer
    /// gone) is backed off and served through; only `stop()` or a listening socket that fails for good ends it.
    public func run() -> RunEnd {
        listener.onTransientError = { [self] error in
            noteRefusal(
                "accept",
                "accept on port \(port) failed for now (\(error)); backing off and serving on (\(listener.transientErrors) so far)"
            )
        }
        while true {
            switch listener.next() {
            case .connection(let c):
                let (ticket, eviction) = pending.admit(peer: c.peer) { [c] in c.shutdownNow() }
                if let e = eviction {
                    noteRefusal(
                        e.perPeer ? "eviction-peer" : "eviction-all",
                        "closed a connection from \(e.peer) that had said nothing for \(PendingConnections.seconds(e.silentNs)) to make room for a newer one (\(e.perPeer ? "at most \(pending.limits.perPeer) from one address" : "at most \(pending.limits.overall) from all") before a handshake)"
                    )
                }
                Thread { [self] in
                    serve(c, ticket: ticket)
                    pending.ended(ticket)
                }.start()
            case .closed: return .stopped
            case .failed(let e):
                note("stopped taking connections: \(e)")
                return .failed(e)
            }
        }
    }

    /// Lines about connections refused or failed before they said who they are: from outside, so as many as an
    /// attacker likes; said at most five in ten seconds each kind, the rest counted.
    let refusals = LogThrottle()

    /// Says a line about a connection from outside, throttled by kind.
    func noteRefusal(_ kind: String, _ line: String) {
        if let shown = refusals.pass(kind, line) { note(shown) }
    }

    public func stop() { listener.stop() }

    /// Stops accepting, then says bye with `reason` on every device's control channel and closes it: a device then
    /// says "the host said bye: …" rather than a broken pipe, and keeps what it owes for the host's return.
    public func stop(saying reason: String) {
        listener.stop()
        for channel in controls.withLock({ Array($0.values) }) { channel.bye(reason) }
    }

    func serve(_ c: Connection, ticket: PendingConnections.Ticket) {
        var settled = false
        do {
            // An encrypted link is authenticated before a message is read: an unpaired device is refused here, and
            // hears nothing but "not paired with this host".
            let opening: Connection.Opening
            do { opening = try c.accept(as: security) } catch {
                noteRefusal("handshake", "refused \(c.peer) at the handshake: \(error)")
                return
            }
            guard
                case .hello(let version, let device, let channel, let profile) = try c.receive(timeoutNs: 5_000_000_000)
            else {
                throw LinkError(.protocolViolation, "the first message must be hello")
            }
            switch opening {
            case .plaintext where !security.allowPlaintext:
                let why =
                    "this host takes only paired devices, over the encrypted link: pair first (ppc-tool pair HOST:PORT, with ppc-host pair on the host)"
                note("refused \(device) (\(channel)): plaintext connection, not paired")
                try? c.send(.helloAck(accepted: false, policy: HostSecurity.pairingPolicy, reason: why))
                return
            case .secure(let paired) where paired != device:
                // The id comes from pairing: one device cannot write into another's library folder.
                let why = "this device's key is paired here as '\(paired)', not '\(device)'"
                note("refused \(device) (\(channel)): \(why)")
                try? c.send(.helloAck(accepted: false, policy: HostSecurity.pairingPolicy, reason: why))
                return
            default: break
            }
            guard version == 1 else {
                try? c.send(
                    .helloAck(
                        accepted: false, policy: policy.name, reason: "protocol version \(version); this host speaks 1")
                )
                throw LinkError(.badVersion, "device \(device) speaks protocol \(version)")
            }
            // A device id names the device's folder in the library: refused unless it is a plain name, never rewritten
            // (rewriting `bay/c` to `bay_c` would make two devices one folder).
            if let why = PlainName.problem(device, what: "device id") {
                try? c.send(.helloAck(accepted: false, policy: policy.name, reason: why))
                throw LinkError(.refused, why)
            }
            // A probe (ppc-tool link probe) measures the clock on the control channel only; the policy judges capture.
            let probing = profile == "probe" && channel == .control  // never on bulk: that would bypass the policy
            if !probing, let why = policy.refusal(of: profile) {
                // logged before the device hears it
                note("refused \(device) (\(channel)): policy \(policy.name): \(why.host)")
                try c.send(.helloAck(accepted: false, policy: policy.name, reason: why.device))
                return
            }
            try c.send(.helloAck(accepted: true, policy: policy.name, reason: ""))
            pending.settled(ticket)
            settled = true
            c.configure(channel)
            state.withLock {
                $0.devices[device, default: Device(relation: nil, lastSeenNs: monotonicNowNs(), events: 0)].lastSeenNs =
                    monotonicNowNs()
            }
            note("accepted \(device) (\(channel)) \(profile)")
            if channel == .bulk {
                try store.serve(
                    c, device: device, clockNote: { [self] in clockNote(device) },
                    inspect: { [self] in inspection($0, claimed: profile) },
                    stopAfterChunks: stopBulkAfterChunks,
                    idleTimeoutNs: deadPeerTimeoutNs, keepIdle: { [self] in controlIsUp(device) },
                    note: { [self] in note($0) },
                    lookStored: { [self] l in
                        let offset = relations[device]?.offsetNs
                        let after =
                            offset.map {
                                String(
                                    format: ", %.0f ms after its t0 on this host's clock",
                                    Double(monotonicNowNs() - (l.t0Ns &+ $0)) / 1e6)
                            } ?? ""
                        note("first look at \(l.clipID) from \(device) stored\(after)")
                        onLive?(
                            .look(
                                device: device, clipID: l.clipID, path: l.path, t0HostNs: offset.map { l.t0Ns &+ $0 },
                                zeroHostNs: offset.map { l.zeroNs &+ $0 },
                                t0DeviceNs: l.t0Ns, zeroDeviceNs: l.zeroNs))
                    })
            } else if channel == .preview {
                try preview(c, device: device)
            } else {
                try control(c, device: device, profile: profile)
            }
            note("closed \(device) (\(channel))")
        } catch {
            if settled {
                note("closed \(c.peer): \(error)")
            } else {
                noteRefusal("unsettled", "closed \(c.peer) before it was accepted: \(error)")
            }
        }
    }

    /// host-meta.json's account of a clip: what the device claimed, what the file measured, and the policy's verdict
    /// on the measurement (a clip below policy is kept, and marked). Nothing of this crosses the wire.
    func inspection(_ clip: String, claimed: String) -> [String: Any] {
        var out: [String: Any] = ["deviceClaimed": claimed, "policy": policy.name]
        if let check = checkBundle {
            let folder = (clip as NSString).deletingLastPathComponent
            if let why = check(folder) {
                out["bundle"] = "does not match its meta.json: \(why)"
                note(
                    "\((folder as NSString).lastPathComponent): does not match its meta.json (\(why)); kept and marked")
            } else {
                out["bundle"] = "matches its meta.json (every file's size and XXH3)"
            }
        }
        guard let measure = measureClip else {
            out["measured"] = "not measured (this host does not read media)"
            return out
        }
        switch measure(clip) {
        case .success(let m):
            out["measured"] =
                [
                    "width": m.width, "height": m.height, "framesPerSecond": m.framesPerSecond, "codec": m.codec,
                    "frames": m.frames,
                    "provenance": "measured: the received clip.mp4's stream, frame rate from its timestamps",
                ] as [String: Any]
            if let v = policy.verdict(measured: m) {
                out["belowPolicy"] = v
                note("\(clip): \(v) (claimed \(claimed)); kept and marked")
            }
        case .failure(let e):
            out["measured"] = "could not be measured: \(e.reason)"
            if policy.minimumHeight > 0 || policy.minimumFPS > 0 { out["belowPolicy"] = "unverified: \(e.reason)" }
        }
        return out
    }

    func clockNote(_ device: String) -> [String: Any] {
        var note: [String: Any] = ["clockRelation": "none reported"]
        if let r = relations[device] {
            note["clockRelation"] =
                [
                    "offsetNs": r.offsetNs, "skewPpm": r.skewPpm, "uncertaintyNs": r.uncertaintyNs,
                    "samples": r.samples,
                    "meaning": "host time = device time + offset (+ skew × elapsed)",
                ] as [String: Any]
        }
        if let bay = bay(of: device) { note["bay"] = bay }
        return note
    }

    /// True while `device` has a control channel open.
    func controlIsUp(_ device: String) -> Bool { state.withLock { ($0.devices[device]?.controlChannels ?? 0) > 0 } }

    /// A device's live preview: each frame replaces `LIBRARY/<device>/preview.pgm` (written aside and renamed, so a viewer
    /// never reads half a picture). Nothing is kept beyond the newest frame.
    func preview(_ c: Connection, device: String) throws(LinkError) {
        let dir = "\(store.library)/\(device)"
        var frames = 0
        while true {
            let m: LinkMessage
            do { m = try c.receive(timeoutNs: deadPeerTimeoutNs) } catch  where error.code == .closed {
                note("preview from \(device) ended after \(frames) frames")
                return
            } catch  where error.code == .deadPeer {
                if controlIsUp(device) { continue }
                throw LinkError(.deadPeer, "preview channel of \(device) idle with no control channel up")
            }
            guard case .preview(_, _, let w, let h, let luma) = m else {
                throw LinkError(.protocolViolation, "\(m.name) on the preview channel")
            }
            do {
                try FileSystem.makeDirectory(dir)
                let tmp = "\(dir)/.preview.pgm.tmp"
                try (Data("P5\n\(w) \(h)\n255\n".utf8) + Data(luma)).write(to: URL(fileURLWithPath: tmp))
                try FileSystem.rename(tmp, "\(dir)/preview.pgm")
            } catch { throw LinkError(.io, "\(dir)/preview.pgm: \(error)") }
            if frames == 0 { note("preview from \(device): \(w)x\(h) luma, newest frame only in \(dir)/preview.pgm") }
            onLive?(.preview(device: device, width: Int(w), height: Int(h), luma: luma))
            frames += 1
        }
    }

    func control(_ c: Connection, device: String, profile: String) throws(LinkError) {
        state.withLock {
            $0.devices[device]?.controlChannels += 1
            $0.devices[device]?.profile = profile
        }
        let channel = ControlChannel(c, device: device)
        controls.withLock { $0[ObjectIdentifier(channel)] = channel }
        onLive?(.connected(device: device))
        defer {
            controls.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(channel)) }
            state.withLock { $0.devices[device]?.controlChannels -= 1 }
            onLive?(.disconnected(device: device))
        }
        while true {
            let m: LinkMessage
            do { m = try c.receive(timeoutNs: deadPeerTimeoutNs) } catch  where error.code == .closed { return } catch
                where error.code == .deadPeer
            {
                throw LinkError(
                    .deadPeer,
                    "dead peer: \(device) sent nothing for \(deadPeerTimeoutNs / 1_000_000) ms (three heartbeats)")
            }
            let now = monotonicNowNs()
            state.withLock { $0.devices[device]?.lastSeenNs = now }
            switch m {
            case .heartbeat(let seq, _): try channel.send(.heartbeatAck(sequence: seq, hostTimeNs: monotonicNowNs()))
            case .syncProbe(let seq, let t1):
                try channel.send(.syncReply(sequence: seq, t1: t1, t2: now, t3: monotonicNowNs()))
            case .relationUpdate(let o, let k, let u, let n):
                // A device's figures are read, not trusted: the host adds the offset to the device's shot times.
                guard k.isFinite, abs(k) <= 1e6, u >= 0, u < DeviceLink.largestTimeNs,
                    o.magnitude < DeviceLink.largestTimeNs.magnitude
                else {
                    throw LinkError(
                        .malformed,
                        "relation_update from \(device): offset \(o) ns, skew \(k) ppm and uncertainty \(u) ns are not a clock relation"
                    )
                }
                state.withLock {
                    $0.devices[device]?.relation = ClockRelation.Report(
                        offsetNs: o, skewPpm: k, uncertaintyNs: u, samples: n)
                }
            case .shot(_, let t0):
                guard t0.magnitude < DeviceLink.largestTimeNs.magnitude else {
                    throw LinkError(
                        .malformed, "shot from \(device): t0 \(t0) ns is no reading of a capture clock (|t0| < 2^62)")
                }
                let relation = state.withLock {
                    $0.devices[device]?.events += 1
                    $0.devices[device]?.lastShotDeviceNs = t0
                    $0.devices[device]?.lastShotAtNs = now
                    return $0.devices[device]?.relation
                }
                onLive?(.shot(device: device, t0HostNs: relation?.hostTime(ofDevice: t0)))
                relay(shotAt: t0, from: device)
            case .deviceInfo(let bay, let hears):
                if let why = bay.isEmpty ? nil : PlainName.problem(bay, what: "bay") {
                    throw LinkError(.malformed, "device_info from \(device): \(why)")
                }
                state.withLock {
                    $0.devices[device]?.claimedBay = bay
                    $0.devices[device]?.hears = hears
                }
                onLive?(.status(device: device))
            case .candidate, .announce, .interruption: state.withLock { $0.devices[device]?.events += 1 }
            case .status(let armed, let fps, let dropped, let thermal, let celsius, let free):
                let st = DeviceStatus(
                    armed: armed, framesPerSecond: fps, framesDropped: dropped, thermal: thermal,
                    thermalCelsius: celsius.isNaN ? nil : celsius,
                    storageFreeBytes: free, receivedNs: now)
                state.withLock { $0.devices[device]?.status = st }
                onLive?(.status(device: device))
            case .bye(let reason):
                note("bye from \(device): \(reason)")
                return
            default: throw LinkError(.protocolViolation, "\(m.name) on the control channel")
            }
        }
    }
}

/// A device's control channel on the host: its serving thread answers on it and a stop says bye on it, one message at a
/// time (an encrypted link's sending state must not be shared by two writers).
final class ControlChannel: Sendable {
    let connection: Connection
    let device: String
    /// Whether a bye was said: nothing is sent after it.
    private let closed = Guarded<Bool>(false)

    init(_ connection: Connection, device: String) {
        self.connection = connection
        self.device = device
    }

    func send(_ m: LinkMessage) throws(LinkError) {
        try closed.withLock { (closed: inout Bool) throws(LinkError) in
            guard !closed else { throw LinkError(.closed, "the host is stopping") }
            try connection.send(m)
        }
    }

    func bye(_ reason: String) {
        closed.withLock { closed in
            guard !closed else { return }
            closed = true
            try? connection.send(.bye(reason: reason))
            connection.shutdownNow()
        }
    }
}
