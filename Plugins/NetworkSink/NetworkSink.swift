import Config
import Foundation
import Link
import Pairing
import PayloadSource
import Pipeline
import Synchronization
import Syscall
import Transfer

/// `network`: candidates, shots and announces on the control channel; clips on the bulk channel, one at a time,
/// resumable, each confirmed by the host (verified whole) before `deliver` returns — so the clip's fragments stay pinned
/// on the device until the host holds it.
///
/// Threads: events come from the audio thread, announces from the mint thread, status from the status thread,
/// deliveries from the delivery thread; the link they share is behind a lock (a reconnect replaces it).
public final class NetworkSink: ClipSink, EventSink, SinkStatusReporting, TransferYielding, FrameObserving,
    DeviceStatusObserving,
    OwedClipsSending, ShotRelaying, LookSending
{
    /// Set by the session: each shot the host relays from a bay-mate.
    public var onRelayedShot: (@Sendable (RelayedShot) -> Void)?
    let host: String
    let port: Int
    let config: Configuration
    /// Injected clock error (tests): the device clock reads true + offset + skew × elapsed.
    var clockOffsetNs: Int64 = 0
    var clockSkewPpm: Double = 0
    /// How long one clip's delivery may take, reconnects included, before it is left in the outbox.
    var deliveryNs: Int64 = 60_000_000_000
    /// Set by the session: while it says so, transfers pause between chunks (policy: transfer yields first).
    public var mustYield: (@Sendable () -> Bool)?
    /// Live preview frames per second (0: none).
    var previewFps: Double = 0
    /// Where this device's identity and pinned hosts are (nil: the XDG state directory).
    var stateDirectory: String?
    /// Plaintext to a loopback host (benches and tests); refused for any other address.
    var insecureLoopbackOnly = false
    /// Set once, by the delivery thread when the link is up; read per frame by the capture thread without a lock.
    let preview = AtomicLazyReference<PreviewSender>()
    /// The link: replaced by the delivery thread (`adopt`: a first link, a reconnect), read by the threads that send
    /// events and status.
    var link: DeviceLink? { linkLock.withLock { linkStorage } }
    /// Under `linkLock`: the link, and the events that found none (or a dropped one), oldest first, for the next link.
    private var linkStorage: DeviceLink?
    private var heldEvents: [LinkMessage] = []
    private var heldEventsShed = 0
    /// Under `linkLock`: when each announced clip was minted (CLOCK_MONOTONIC ns), until its delivery begins.
    private var mintedNs: [String: Int64] = [:]
    /// Delivery thread only: when the host last failed — could not be reached, or a delivery did not complete — and why.
    /// A clip minted before then is not tried (`deliver`).
    var lastFailure: (atNs: Int64, why: String)?
    private let linkLock = NSLock()
    /// Events held while the host is out of reach: a few minutes of a busy bay's candidates, shots and announces
    /// (assumed); beyond it the oldest go, counted.
    static let heldEventLimit = 256

    /// Makes `new` the link (nil: none). Events held while there was none go out on it first, in order.
    func adopt(_ new: DeviceLink?) {
        let (held, shed): ([LinkMessage], Int) = linkLock.withLock {
            linkStorage = new
            guard new != nil else { return ([], 0) }
            defer {
                heldEvents.removeAll()
                heldEventsShed = 0
            }
            return (heldEvents, heldEventsShed)
        }
        guard let new, !held.isEmpty || shed > 0 else { return }
        let sent = held.filter { (try? new.send(event: $0)) != nil }.count
        history.add(
            "\(sent) of \(held.count) events held while the host was out of reach sent now"
                + (shed > 0 ? "; \(shed) older ones were shed (at most \(Self.heldEventLimit) are held)" : ""))
    }
    var settings: DeviceLink.Settings?
    var outbox: Outbox?
    /// Reconnections a delivery may make after its link drops (each resumes at the host's committed offset).
    static let reconnects = 5
    /// The least a reconnect is given to connect and be answered when its delivery's deadline is nearly reached. Assumed.
    static let leastReconnectNs: Int64 = 100_000_000
    /// Why the host could not be reached at open, if it could not (capture goes on; clips wait in the outbox).
    public private(set) var unreachable: String?
    let history = History()

    /// The link's state changes, each with the wall time it happened; also written to stderr as they happen.
    final class History: @unchecked Sendable {
        // @unchecked: under `lock`.
        let lock = NSLock()
        var lines: [String] = []
        func add(_ line: String) {
            lock.lock()
            lines.append(line)
            lock.unlock()
            let shown = "network sink: \(StandardStream.visible(line))\n"  // a host's reasons are shown, not obeyed
            _ = shown.utf8CString.withUnsafeBytes {
                StandardStream.write(2, UnsafeRawBufferPointer(rebasing: $0.dropLast()))
            }
        }
    }

    public var statusHistory: [String] {
        history.lock.lock()
        defer { history.lock.unlock() }
        return history.lines
    }

    /// Sends a first look on the link that is up (none up: not sent — a look is never worth a connection of its own).
    public func sendLook(_ look: FirstLook) -> String? {
        guard let link, case .up = link.status else { return "no link to the host now" }
        do {
            try LookSender.send(
                path: look.path, clipID: look.clipID, t0Ns: look.t0Ns, zeroNs: look.zeroNs, over: link.bulk)
            return nil
        } catch { return "\(error)" }
    }

    /// Makes a link and records its state changes.
    func connect(_ settings: DeviceLink.Settings) throws -> DeviceLink {
        let link = try DeviceLink(settings)
        let history = history
        link.onStatus = { history.add("\(ISO8601DateFormatter().string(from: Date())) \($0.sentence)") }
        let relayed = onRelayedShot
        link.onRelayedShot = { m in
            guard case .relayedShot(let id, let t0, let u, let from) = m else { return }
            relayed?(RelayedShot(id: id, t0Ns: t0, uncertaintyNs: u, from: from))
        }
        try link.start()
        // Which bay this device stands at, and whether it hears: a host relays its bay-mates' shots to it.
        if let context { try link.send(event: .deviceInfo(bay: context.bay ?? "", hears: context.hears)) }
        return link
    }

    public init(host: String, port: Int, config: Configuration) {
        self.host = host
        self.port = port
        self.config = config
    }

    public func open(_ context: SessionContext) throws {
        guard port > 0 else {
            throw LinkError(.io, "network sink: no host port (set params.port or run --host HOST:PORT)")
        }
        // Not paired with this host is a setup error, said before capture starts — not a host that is down.
        let security = try DeviceLinkSecurity.resolve(
            host: host, port: port, stateDirectory: stateDirectory, insecureLoopbackOnly: insecureLoopbackOnly)
        outbox = try Outbox(directory: context.outboxDirectory)
        var settings = DeviceLink.Settings(
            host: host, port: port, deviceID: context.deviceID, captureProfile: context.captureProfile,
            syncBurst: Int(config[.syncBurstTarget]), heartbeatIntervalNs: config[.heartbeatIntervalNs])
        settings.clockOffsetNs = clockOffsetNs
        settings.clockSkewPpm = clockSkewPpm
        settings.security = security
        settings.connectTimeoutNs = config[.connectTimeoutNs]
        self.settings = settings
        self.context = context
    }

    var context: SessionContext?

    /// Makes a link to the host when there is none or it dropped (connecting with backoff), and starts the preview on
    /// it. Called on the delivery thread once capture runs, so a host that is down or hangs never delays arming. The
    /// history says when the host becomes unreachable and when it is reached again, not every failed try. True when a
    /// link is up.
    @discardableResult
    func reachHost() -> Bool {
        guard needsRetry else { return true }
        guard let settings else { return false }
        link?.close(reason: "reconnecting after the link dropped")
        adopt(nil)
        do {
            adopt(try connect(settings))
        } catch {
            if unreachable == nil { history.add("host unreachable: \(host):\(port): \(error)") }
            unreachable = "\(host):\(port): \(error)"
            lastFailure = (monotonicNowNs(), "unreachable: \(error)")
            return false
        }
        if unreachable != nil { history.add("host reached again") }
        unreachable = nil
        lastFailure = nil
        startPreviewIfWanted()
        return true
    }

    /// Starts the live preview once the link is up, if it was asked for and is not running (a host reached only later
    /// in the session gets it then).
    func startPreviewIfWanted() {
        guard previewFps > 0, preview.load() == nil, let settings, let context else { return }
        do {
            _ = preview.storeIfNil(
                try PreviewSender(
                    host: host, port: port, deviceID: context.deviceID, captureProfile: context.captureProfile,
                    fps: previewFps,
                    security: settings.security, connectTimeoutNs: settings.connectTimeoutNs))
            history.add(
                "preview on: the newest frame at most \(previewFps) times a second, shed when the link cannot take it")
        } catch { history.add("preview absent: \(error)") }
    }

    public var needsRetry: Bool {
        guard settings != nil else { return false }
        guard let link else { return true }
        if case .dropped = link.status { return true }
        return false
    }

    public func sendOwed(while keepGoing: () -> Bool) -> [String] {
        guard let outbox, reachHost() else { return [] }
        let pending = outbox.pending
        var confirmed: [String] = []
        for clip in pending {
            guard keepGoing() else {
                history.add("\(pending.count - confirmed.count) owed clips left in the outbox: asked to stop now")
                break
            }
            do {
                _ = try send(clip)
                confirmed.append(clip)
            } catch let e as PayloadError where e.code == .badBundle {
                history.add(e.message)  // this clip's fault, not the host's: the rest are still sent
            } catch {
                history.add("\(clip) still owed: \(error)")
                break
            }
        }
        return confirmed
    }

    public func candidate(_ c: DetectedImpact) { event(.candidate(id: c.id, t0Ns: c.t0Ns, score: c.score)) }
    public func shot(_ c: DetectedImpact) { event(.shot(id: c.id, t0Ns: c.t0Ns)) }
    public func announce(clipID: String, bytes: UInt64, files: Int) {
        linkLock.withLock { mintedNs[clipID] = monotonicNowNs() }
        event(.announce(clipID: clipID, totalBytes: bytes, files: UInt16(clamping: files)))
    }

    /// The device's state for the host's live view: state, not an event — when the link is down it is not sent (the
    /// history already says the link is down) and the next one, a second later, says it afresh.
    public func deviceStatus(_ s: DeviceStatusReport) {
        guard let link else { return }
        if case .dropped = link.status { return }
        try? link.send(
            event: .status(
                armed: s.armed, framesPerSecond: s.framesPerSecond, framesDropped: UInt64(max(0, s.framesDropped)),
                thermal: s.thermal,
                thermalCelsius: s.thermalCelsius ?? .nan, storageFreeBytes: UInt64(max(0, s.storageFreeBytes ?? 0))))
    }

    /// Events are sent at once on the control channel, from the detecting thread, so they never wait for a reconnect.
    /// One that finds no link (not made yet: the host is reached once capture runs, or down) or a dropped one is held
    /// and sent first on the next link (`adopt`); the history says so, and its clip carries the same facts in meta.json.
    func event(_ m: LinkMessage) {
        // Decided under the lock, so a link made meanwhile cannot miss an event held just before it.
        let (live, why): (DeviceLink?, String) = linkLock.withLock {
            if let l = linkStorage {
                if case .dropped = l.status {} else { return (l, "") }
            }
            if heldEvents.count >= Self.heldEventLimit {
                heldEvents.removeFirst()
                heldEventsShed += 1
            }
            heldEvents.append(m)
            return (nil, linkStorage.map { $0.status.sentence } ?? "no link to the host yet")
        }
        guard let live else {
            history.add("\(m.name) held for the next link: \(why)")
            return
        }
        do { try live.send(event: m) } catch { history.add("\(m.name) not sent: \(error)") }
    }

    public func deliver(staged: String, clipID: String) throws -> String {
        guard let outbox else { throw LinkError(.closed, "network sink not open") }
        let mintedAt = linkLock.withLock { mintedNs.removeValue(forKey: clipID) }
        _ = try outbox.enqueue(staged: staged, clipID: clipID)
        // A clip that was already waiting when the host failed is not tried: each such try would cost a connection
        // timeout, or a whole delivery timeout for a host that hangs, and at the end of a session the clips queued
        // behind a failed one would each pay it before the run could end. It is sent with the rest of the outbox when
        // the host is next reached (after the next clip it confirms, or every `link.owedRetryIntervalNs`).
        if let failure = lastFailure, let mintedAt, mintedAt < failure.atNs {
            throw LinkError(
                .closed,
                "not tried: the host failed after \(clipID) was minted (\(failure.why)); it waits in \(outbox.directory), sent when the host is next reached or by `ppc-tool transfer drain`"
            )
        }
        // Unreachable when deliveries began, or lost since: one more attempt (with backoff) before the clip waits in the
        // outbox.
        if link == nil { reachHost() }
        guard link != nil else {
            throw LinkError(
                .closed,
                "host unreachable (\(unreachable ?? "no link")); \(clipID) waits in \(outbox.directory) for `ppc-tool transfer drain`"
            )
        }
        return try send(clipID)
    }

    /// Sends one queued clip (`transfer`); a failure is remembered as the host's latest (`lastFailure`). A bundle whose
    /// files are not those minted (`ClipMeta.verifyBundle`) is not sent — the host would confirm the damage and this
    /// copy would be removed — but kept, and said so (`.badBundle`); it is no failure of the host's.
    func send(_ clipID: String) throws -> String {
        guard let outbox else { throw LinkError(.closed, "network sink not open") }
        do { _ = try ClipMeta.verifyBundle(outbox.path(of: clipID), clipID: clipID) } catch {
            throw PayloadError(
                .badBundle,
                "\(clipID) not sent, kept in \(outbox.directory): \(error.message) — damaged on this disk since it was minted"
            )
        }
        do {
            return try transfer(clipID)
        } catch {
            lastFailure = (monotonicNowNs(), "\(error)")
            throw error
        }
    }

    /// Sends one queued clip; it leaves the outbox only when the host confirms it. A link that drops mid-transfer is
    /// reconnected (with backoff) and the transfer resumes where the host's committed offset says.
    func transfer(_ clipID: String) throws -> String {
        guard let outbox else { throw LinkError(.closed, "network sink not open") }
        var attempt = 0
        let deadline = monotonicNowNs() + deliveryNs
        while true {
            guard var link else { throw LinkError(.closed, "no link to the host") }
            if case .dropped(let why) = link.status, let settings, attempt < Self.reconnects {
                // Dropped while idle (the host went away, or this device was suspended): a new link, said so.
                attempt += 1
                link.close(reason: "reconnecting after: \(why)")
                adopt(nil)
                link = try reconnect(settings, clipID: clipID, deadline: deadline)
                adopt(link)
            }
            let progress = BundleSender.Progress()
            do {
                let report = try BundleSender.send(
                    directory: outbox.path(of: clipID), clipID: clipID, over: link.bulk,
                    budget: Int(config[.payloadPumpBudgetBytes]), tickNs: config[.pumpTickIntervalNs],
                    progress: progress, answerTimeoutNs: max(1_000_000_000, deadline - monotonicNowNs()),
                    shouldPause: mustYield,
                    pauseLimitNs: max(0, deadline - monotonicNowNs()))
                if progress.report.pausedNs > 0 {
                    history.add(
                        String(
                            format: "%@ paused %.1f s between chunks while policy asked transfers to yield", clipID,
                            Double(progress.report.pausedNs) / 1e9))
                }
                try outbox.remove(clipID)
                return "\(host):\(port):\(report.remotePath)"
            } catch let e as LinkError where e.code == .yielded {
                history.add(e.reason)
                // The bulk channel has chunks in flight: this link is closed, and the next delivery opens a fresh one.
                link.close(reason: "transfer yielded to policy")
                adopt(nil)
                throw LinkError(
                    .yielded, "\(e.reason); \(clipID) waits in \(outbox.directory) for `ppc-tool transfer drain`")
            } catch let e as LinkError
                where e.code == .closed || e.code == .io || e.code == .deadPeer || e.code == .stalled
            {
                guard attempt < Self.reconnects, monotonicNowNs() < deadline else {
                    throw LinkError(
                        e.code,
                        "\(clipID) not delivered within \(deliveryNs / 1_000_000_000) s and \(attempt) reconnects (\(e.reason)); it waits in \(outbox.directory) for `ppc-tool transfer drain`"
                    )
                }
                attempt += 1
                link.close(reason: "reconnecting after: \(e.reason)")
                adopt(nil)
                guard let settings else { throw e }
                adopt(try reconnect(settings, clipID: clipID, deadline: deadline))  // connects with backoff
            }
        }
    }

    /// A new link for a delivery under way, given only what is left of its deadline to connect and be answered (a host
    /// frozen mid-transfer accepts the connection in its kernel and never answers: that wait once outlasted the delivery
    /// timeout by the hello's 5 s); one that cannot be made says where the clip waits.
    func reconnect(_ settings: DeviceLink.Settings, clipID: String, deadline: Int64) throws(LinkError) -> DeviceLink {
        var bounded = settings
        let left = max(Self.leastReconnectNs, deadline - monotonicNowNs())
        bounded.connectTimeoutNs = min(settings.connectTimeoutNs, left)
        bounded.answerTimeoutNs = min(settings.answerTimeoutNs ?? .max, left)
        do {
            return try connect(bounded)
        } catch {
            let code = (error as? LinkError)?.code ?? .closed
            let waits = "it waits in \(outbox?.directory ?? "the outbox") for `ppc-tool transfer drain`"
            if monotonicNowNs() >= deadline {
                throw LinkError(
                    code,
                    "\(clipID) not delivered within \(deliveryNs / 1_000_000_000) s: the link dropped and was not made again in time (\(error)); \(waits)"
                )
            }
            throw LinkError(
                code, "\(clipID) not delivered: the link dropped and could not be made again (\(error)); \(waits)")
        }
    }

    public func observe(_ frame: VideoFrameBuffer, format: VideoFormat, info: FrameInfo) {
        preview.load()?.offer(
            luma: frame.luma, stride: frame.lumaStride, width: format.width, height: format.height, index: info.index,
            timeNs: info.timeNs)
    }

    public func finish() throws {
        if let p = preview.load() {
            p.close()
            history.add("preview: \(p.sent) frames sent, \(p.shed) shed (live only: never queued)")
        }
        link?.close(reason: "session ended")
        let (held, shed) = linkLock.withLock { (heldEvents.count, heldEventsShed) }
        if held + shed > 0 {
            history.add(
                "\(held + shed) events never reached the host (it was not reached again before the session ended); their clips' meta.json carry them"
            )
        }
    }

    /// The link's state in a sentence, for the report.
    public var status: String { link?.status.sentence ?? "not connected" }

    public static let factory = PluginFactory(
        PluginDescriptor(
            name: "network", kind: .sink,
            summary:
                "Events on the control channel, clips on the bulk channel to a ppc-host: queued, resumable, verified.",
            parameters: [
                .init("host", .string, default: .string("127.0.0.1"), "The host's IPv4 address."),
                .init(
                    "port", .integer, default: .number(0, isInteger: true), minimum: 0, maximum: 65_535,
                    "The host's port (run --host overrides)."),
                .init(
                    "clockOffsetNs", .integer, default: .number(0, isInteger: true), minimum: -1.0e15, maximum: 1.0e15,
                    "Injected clock offset for tests (run --clock-offset-ns)."),
                .init(
                    "clockSkewPpm", .number, default: .number(0, isInteger: true), minimum: -1000, maximum: 1000,
                    "Injected clock skew for tests (run --clock-skew-ppm)."),
                .init(
                    "previewFps", .number, default: .number(0, isInteger: true), minimum: 0, maximum: 120,
                    "Live preview to the host (the newest frame's luma at 160 px wide, never queued); 0: off."),
                .init(
                    "deliverySeconds", .number, default: .number(60, isInteger: true), minimum: 1, maximum: 86_400,
                    "How long one clip's delivery may take, reconnects included, before it waits in the outbox (run --delivery-timeout)."
                ),
                .init(
                    "stateDirectory", .string, default: .string(""),
                    "This device's identity and pinned hosts (run --state); empty: $XDG_STATE_HOME/ppc."),
                .init(
                    "insecureLoopbackOnly", .boolean, default: .bool(false),
                    "Plaintext to a loopback host, for benches and tests; refused for any other address."),
            ]),
        make: { p, config in
            if p.boolean("insecureLoopbackOnly"), !DeviceLinkSecurity.isLoopback(p.string("host")) {
                throw RegistryError(
                    "network: insecureLoopbackOnly with host \(p.string("host")): plaintext is only for a loopback address"
                )
            }
            let s = NetworkSink(host: p.string("host"), port: p.integer("port"), config: config)
            s.clockOffsetNs = Int64(p.integer("clockOffsetNs"))
            s.clockSkewPpm = p.number("clockSkewPpm")
            s.deliveryNs = Int64(p.number("deliverySeconds") * 1e9)
            s.previewFps = p.number("previewFps")
            s.stateDirectory = p.string("stateDirectory").isEmpty ? nil : p.string("stateDirectory")
            s.insecureLoopbackOnly = p.boolean("insecureLoopbackOnly")
            return s
        })
}
