import Foundation
import Syscall

/// A device's link to a host: a control connection (TCP_NODELAY) and a bulk connection, each opened with hello.
///
/// On connect: a burst of `syncBurst` probes, NTP arithmetic, minimum-delay selection, a relation_update. Then a
/// control thread sends a heartbeat every `heartbeatIntervalNs` and a sync probe every fourth beat, refreshing the
/// relation; three missed heartbeats make the link `dropped` with the reason, and so does finding this device was
/// stopped or suspended for longer than that (a gap in CLOCK_BOOTTIME between beats). Events (candidate, shot, announce) may be
/// sent from any thread. Tests can inject a clock offset and skew so they know the truth.
public final class DeviceLink: @unchecked Sendable {
    // @unchecked: connections are immutable; the control connection is received on only by the control thread and sent
    // on under `sendLock`; the bulk connection belongs to the transfer; `status` and the estimator are under `state`.

    public struct Settings: Sendable {
        public var host: String
        public var port: Int
        public var deviceID: String
        /// `WxH@FPS codec`: what the host's ingest policy judges.
        public var captureProfile: String
        public var syncBurst: Int
        public var heartbeatIntervalNs: Int64
        /// How long each channel's connection may wait for the host to answer (`link.connectTimeoutNs`).
        public var connectTimeoutNs: Int64 = Connection.connectTimeoutNs
        /// How long the host may take to answer the handshake and hello on each channel; nil: the usual 10 s and 5 s. A
        /// delivery reconnecting near its deadline gives only what is left of it.
        public var answerTimeoutNs: Int64?
        /// Injected clock error for tests: the device clock reads host + offset + skew × elapsed.
        public var clockOffsetNs: Int64 = 0
        public var clockSkewPpm: Double = 0
        /// The identity and pinned host key every channel is opened with (nil: plaintext, only ever to a loopback host
        /// that allows it — benches and tests).
        public var security: DeviceSecurity?

        public init(
            host: String, port: Int, deviceID: String, captureProfile: String, syncBurst: Int,
            heartbeatIntervalNs: Int64
        ) {
            self.host = host
            self.port = port
            self.deviceID = deviceID
            self.captureProfile = captureProfile
            self.syncBurst = syncBurst
            self.heartbeatIntervalNs = heartbeatIntervalNs
        }
    }

    /// Where the link is, with a sentence a person can read.
    public enum Status: Sendable, Equatable {
        case connecting, syncing, up
        case degraded(String)
        case dropped(String)

        public var sentence: String {
            switch self {
            case .connecting: "connecting to the host"
            case .syncing: "measuring the clock against the host"
            case .up: "linked: events cross at once, clips follow on the bulk channel"
            case .degraded(let why): "linked but degraded: \(why)"
            case .dropped(let why): "link dropped: \(why)"
            }
        }
    }

    public let settings: Settings
    public let control: Connection
    public let bulk: Connection
    public let policy: String
    let sendLock = NSLock()
    let state = NSLock()
    var statusValue = Status.connecting
    var estimator = ClockEstimator()
    var stopping = false
    var beat: UInt64 = 0
    /// CLOCK_BOOTTIME of the last completed exchange with the host (control thread only, or before `start`).
    var lastExchangeNs = bootNowNs()
    let group = DispatchGroup()
    let clock: InjectedClock
    /// Called on every status change, with the new status (a sink logs it; a report keeps the history).
    public var onStatus: (@Sendable (Status) -> Void)?

    /// Connects both channels and says hello; throws `refused` (with the host's policy and reason) if turned away.
    public init(_ settings: Settings) throws(LinkError) {
        self.settings = settings
        clock = InjectedClock(offsetNs: settings.clockOffsetNs, skewPpm: settings.clockSkewPpm)
        control = try Self.open(settings, .control, attempts: 6)
        policy = try Self.hello(control, settings, .control)
        bulk = try Self.open(settings, .bulk, attempts: 6)
        _ = try Self.hello(bulk, settings, .bulk)
    }

    /// Connects one channel and, when the device is paired, runs the handshake that authenticates both ends.
    public static func open(_ s: Settings, _ channel: LinkMessage.Channel, attempts: Int) throws(LinkError)
        -> Connection
    {
        let c = try Connection.connect(
            host: s.host, port: s.port, channel: channel, attempts: attempts, timeoutNs: s.connectTimeoutNs)
        if let security = s.security {
            try c.secure(as: security, channel: channel, timeoutNs: s.answerTimeoutNs ?? Connection.handshakeTimeoutNs)
        }
        return c
    }

    static func hello(_ c: Connection, _ s: Settings, _ channel: LinkMessage.Channel) throws(LinkError) -> String {
        try c.send(.hello(protocolVersion: 1, deviceID: s.deviceID, channel: channel, captureProfile: s.captureProfile))
        guard
            case .helloAck(let accepted, let policy, let reason) = try c.receive(
                timeoutNs: s.answerTimeoutNs ?? 5_000_000_000)
        else {
            throw LinkError(.protocolViolation, "the host did not answer hello")
        }
        guard accepted else {
            if policy == HostSecurity.pairingPolicy { throw LinkError(.refused, reason) }
            throw LinkError(.refused, "the host's ingest policy '\(policy)' refused this device: \(reason)")
        }
        return policy
    }

    /// This device's capture clock (with any injected error).
    public func deviceNow() -> Int64 { clock.now() }

    public var status: Status {
        state.lock()
        defer { state.unlock() }
        return statusValue
    }

    func set(_ s: Status) {
        state.lock()
        let changed = statusValue != s
        statusValue = s
        let notify = onStatus
        state.unlock()
        if changed { notify?(s) }
    }

    /// The clock relation so far (host = device + offset …).
    public var relation: ClockRelation? {
        state.lock()
        defer { state.unlock() }
        return estimator.relation
    }

    /// The sync exchanges the relation rests on (a window of the newest), for reports and offline analysis.
    public var syncSamples: [SyncSample] {
        state.lock()
        defer { state.unlock() }
        return estimator.samples
    }

    /// The host's next message on the control channel, waited for at most three heartbeat intervals (`timeoutNs`). A
    /// bye — the host stopping — ends the link with the host's reason.
    ///
    /// A shot the host relays from a bay-mate may come at any time: it is handed to `onRelayedShot` as it arrives and the
    /// wait goes on for the answer expected.
    func receiveFromHost(timeoutNs: Int64? = nil) throws(LinkError) -> LinkMessage {
        let deadline = monotonicNowNs() + (timeoutNs ?? 3 * settings.heartbeatIntervalNs)
        while true {
            let m = try control.receive(timeoutNs: max(0, deadline - monotonicNowNs()))
            if case .bye(let reason) = m { throw LinkError(.bye, "the host said bye: \(reason)") }
            if case .relayedShot = m {
                onRelayedShot?(m)
                continue
            }
            return m
        }
    }

    /// Called on the control thread with each shot the host relays from a bay-mate (set before `start`).
    public var onRelayedShot: (@Sendable (LinkMessage) -> Void)?

    /// Listens on the control channel for `ns` (between heartbeats): a relayed shot is handed on as it comes, not a
    /// heartbeat later; anything else the host sends unasked is a protocol violation.
    func listen(forNs ns: Int64) throws(LinkError) {
        let deadline = monotonicNowNs() + ns
        while true {
            let left = deadline - monotonicNowNs()
            if left <= 0 { return }
            let m: LinkMessage
            do { m = try receiveFromHost(timeoutNs: left) } catch  where error.code == .deadPeer { return }
            throw LinkError(.protocolViolation, "\(m.name) from the host unasked")
        }
    }

    /// A bye the host sent before it closed the channel, still unread, as `receiveFromHost` says it (nil when none).
    func pendingBye() -> String? {
        do { _ = try receiveFromHost(timeoutNs: 0) } catch  where error.code == .bye { return error.reason } catch {}
        return nil
    }

    /// One sync sample on the control channel (control thread only, or before `start`): ``takeSample`` on this link.
    public func probe() throws(LinkError) {
        let s = try Self.takeSample(
            send: { (m: LinkMessage) throws(LinkError) in try sendControl(m) },
            receive: { () throws(LinkError) -> LinkMessage in try receiveFromHost() },
            now: deviceNow, sequence: &beat)
        lastExchangeNs = bootNowNs()
        state.lock()
        estimator.add(s)
        state.unlock()
    }

    /// One sync sample: three `sync_probe` / `sync_reply` exchanges back to back, the one with the least delay kept.
    /// The first of them usually finds both ends' cores idle, and waking them is latency on one path more than the
    /// other (an asymmetry the offset cannot see); the next find them awake. Measured 2026-11-30 (`bench link`, 400
    /// samples 50 ms apart): single exchanges had delays of 130–190 µs median and skew errors up to 0.23 ppm after 20 s;
    /// best of three, 32–33 µs and at most 0.008 ppm. `now` is the device's clock; `sequence` numbers the probes.
    /// The largest clock reading (ns) taken from a peer: 2^62, about 146 years of uptime. Two such readings add or
    /// subtract without overflowing an Int64.
    public static let largestTimeNs: Int64 = 1 << 62

    public static func takeSample(
        send: (LinkMessage) throws(LinkError) -> Void, receive: () throws(LinkError) -> LinkMessage, now: () -> Int64,
        sequence: inout UInt64
    ) throws(LinkError) -> SyncSample {
        var fastest: SyncSample?
        for _ in 0..<3 {
            sequence += 1
            let t1 = now()
            try send(.syncProbe(sequence: sequence, t1: t1))
            guard case .syncReply(let seq, _, let t2, let t3) = try receive(), seq == sequence else {
                throw LinkError(.protocolViolation, "expected sync_reply \(sequence)")
            }
            // The host's times are read, not trusted: arithmetic on them must not overflow, and a host cannot answer
            // before it received.
            guard t2.magnitude < Self.largestTimeNs.magnitude, t3.magnitude < Self.largestTimeNs.magnitude, t3 >= t2
            else {
                throw LinkError(
                    .malformed,
                    "sync_reply \(sequence): host times \(t2) and \(t3) ns are not a reception and a later reply")
            }
            let s = SyncSample(t1: t1, t2: t2, t3: t3, t4: now())
            if fastest.map({ s.delayNs < $0.delayNs }) ?? true { fastest = s }
        }
        return fastest!
    }

    func publishRelation() throws(LinkError) {
        guard let r = relation else { return }
        try sendControl(
            .relationUpdate(
                offsetNs: r.offsetNs, skewPpm: r.skewPpm, uncertaintyNs: r.uncertaintyNs, samples: UInt32(r.samples)))
    }

    /// The connect-time burst; then the control thread (heartbeats, periodic probes) starts.
    public func start() throws(LinkError) {
        set(.syncing)
        for _ in 0..<settings.syncBurst { try probe() }
        try publishRelation()
        set(.up)
        group.enter()
        Thread { [self] in
            defer { group.leave() }
            var n = 0
            while true {
                state.lock()
                let stop = stopping
                state.unlock()
                if stop { return }
                // Silent for more than three intervals since the last exchange — the host's own limit — means this
                // process was stopped (SIGSTOP) or the machine slept (CLOCK_BOOTTIME counts both): the host has dropped
                // us by now, so the link is dropped here too, and said so — never claimed up on return.
                if let why = suspended(silentFor: bootNowNs() - lastExchangeNs) {
                    set(.dropped(why))
                    control.shutdownNow()
                    bulk.shutdownNow()
                    return
                }
                let exchangeStartNs = bootNowNs()
                do {
                    n += 1
                    if n % 4 == 0 {
                        try probe()
                        try publishRelation()
                    } else {
                        beat += 1
                        try sendControl(.heartbeat(sequence: beat, deviceTimeNs: deviceNow()))
                        guard case .heartbeatAck = try receiveFromHost() else {
                            throw LinkError(.protocolViolation, "expected heartbeat_ack")
                        }
                    }
                    // One reading serves both checks: an exchange that spanned a stop (the process stopped after the
                    // answer came but before it was counted) is caught here, and a stop after this reading is caught at
                    // the top of the next turn, since the reading is from before it.
                    let end = bootNowNs()
                    if let why = suspended(silentFor: end - exchangeStartNs) {
                        set(.dropped(why))
                        control.shutdownNow()
                        bulk.shutdownNow()
                        return
                    }
                    lastExchangeNs = end
                    // Pace the heartbeat: wait out the rest of the interval (this is the heartbeat's clock, not a
                    // synchronisation), listening for shots the host relays meanwhile.
                    try listen(forNs: settings.heartbeatIntervalNs)
                } catch {
                    state.lock()
                    let stop = stopping
                    state.unlock()
                    if !stop {
                        // An exchange that failed because this process was stopped meanwhile says that, not "host gone":
                        // a timed-out wait that lasted two intervals longer than its timeout was a stop; a connection
                        // the host closed after more than three intervals of our silence was its dead-peer rule.
                        let e = error as? LinkError
                        let now = bootNowNs()
                        // A running device is never silent for two intervals (it beats every one), so a host that
                        // closed on us after that much silence closed on a stop — even when the wake came so soon after
                        // the host's three-interval limit that our own count, started a round trip later, is just under it.
                        let why: String? =
                            e?.code == .deadPeer
                            ? suspended(silentFor: now - exchangeStartNs - 2 * settings.heartbeatIntervalNs)
                            : suspended(silentFor: now - lastExchangeNs, beyond: 2 * settings.heartbeatIntervalNs)
                        // A host that stopped said bye first; a heartbeat sent meanwhile fails on its closed socket
                        // before the bye is read, so the bye is looked for before anything else is said.
                        let bye = e?.code == .bye ? e?.reason : pendingBye()
                        set(
                            .dropped(
                                bye ?? why
                                    ?? (e?.code == .deadPeer
                                        ? "no answer to three heartbeats: the host is gone" : e?.reason ?? "\(error)")))
                        control.shutdownNow()
                        bulk.shutdownNow()
                    }
                    return
                }
            }
        }.start()
    }

    /// Why the link cannot be trusted after `silentFor` ns without an exchange (on CLOCK_BOOTTIME, which counts a
    /// stopped process and a sleeping machine), if that is longer than `limit` — by default three heartbeats, the host's
    /// dead-peer limit.
    func suspended(silentFor gap: Int64, beyond limit: Int64? = nil) -> String? {
        guard gap > limit ?? 3 * settings.heartbeatIntervalNs else { return nil }
        return String(
            format:
                "this device was stopped or suspended for %.1f s (%.1f heartbeats); the host has dropped it, so this link is dropped, not resumed",
            Double(gap) / 1e9, Double(gap) / Double(settings.heartbeatIntervalNs))
    }

    func sendControl(_ m: LinkMessage) throws(LinkError) {
        sendLock.lock()
        defer { sendLock.unlock() }
        try control.send(m)
    }

    /// Sends an event (candidate, shot, announce, interruption) on the control channel: it never waits behind bulk.
    public func send(event m: LinkMessage) throws(LinkError) { try sendControl(m) }

    /// Says bye and closes both channels; the link reports `dropped` with the reason.
    public func close(reason: String) {
        state.lock()
        stopping = true
        state.unlock()
        try? sendControl(.bye(reason: reason))
        control.shutdownNow()
        bulk.shutdownNow()
        group.wait()
        set(.dropped(reason))
    }
}
