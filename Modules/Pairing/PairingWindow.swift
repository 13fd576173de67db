import Admission
import Foundation
import Link
import Syscall

/// A host's pairing window: devices connect (`ppc-tool pair HOST:PORT`), each exchange runs on its own thread, and the
/// person at the host is asked about one code at a time.
///
/// - **Concurrent, with deadlines.** Each connection has 10 s to open a pairing (the link's handshake deadline); a
///   silent one holds only its own thread, never the window (before 2026-12-03 one silent connection held the single
///   accept loop for 10 s, and the real device failed with `dead-peer`). Connections that have not opened a pairing are
///   bounded per address (4) and overall (32), the silent longest making room.
/// - **Attempts are codes.** Only an exchange that reached a code counts as an attempt: garbage, a wrong preamble or a
///   refused id costs nothing (before, three garbage requests closed the window in 2.4 s).
/// - **The person sees who asks**: the code, the device id and the address it came from, so an early attacker can be
///   told from the device in hand. Exchanges that reach a code together wait their turn; after a declined or failed
///   code the next waits a second.
public final class PairingWindow: @unchecked Sendable {
    // @unchecked: shared state is behind `state` and `person`; `listener` is used by `run`'s thread only, and stopped.
    public struct Settings: Sendable {
        public var windowNs: Int64
        public var attempts: Int
        public var hostName: String
        public var answerTimeoutNs: Int64 = PairingProtocol.defaultAnswerTimeoutNs
        /// Where the host serves devices (`HOST:PORT`), said to a device the host connected to (it pins the key under
        /// it); nil in a window, where the device already knows.
        public var serves: String?
        public init(windowNs: Int64, attempts: Int, hostName: String, serves: String? = nil) {
            self.windowNs = windowNs
            self.attempts = attempts
            self.hostName = hostName
            self.serves = serves
        }
    }

    /// How the window closed.
    public enum Outcome: Sendable {
        case paired(PairingProtocol.Result, address: String)
        /// Its time ran out, or its attempts were used: how many codes were shown.
        case closed(attempts: Int)
    }

    /// What the person is asked: the code, who asks (id and address), their key's fingerprint; true for yes.
    public typealias Ask =
        @Sendable (_ code: String, _ deviceID: String, _ address: String, _ fingerprint: String, _ deadlineNs: Int64) ->
        Bool

    /// Where devices connect; nil when the host connects to one device itself (`pair(over:)`).
    let listener: Listener?
    let identity: Identity
    let settings: Settings
    let admit: @Sendable (_ deviceID: String, _ key: [UInt8]) -> String?
    let ask: Ask
    let say: @Sendable (String) -> Void
    let pending = PendingConnections(.init(perPeer: 4, overall: 32))
    let throttle = LogThrottle()
    /// Held while a code is put to the person: one at a time.
    let person = NSLock()

    struct State {
        var attempts = 0
        var outcome: Outcome?
        var open: [ObjectIdentifier: Connection] = [:]
        var threads = 0
    }
    let state = Guarded(State())
    let finished = NSCondition()

    public init(
        listener: Listener?, identity: Identity, settings: Settings,
        admit: @escaping @Sendable (_ deviceID: String, _ key: [UInt8]) -> String?,
        ask: @escaping Ask, say: @escaping @Sendable (String) -> Void
    ) {
        self.listener = listener
        self.identity = identity
        self.settings = settings
        self.admit = admit
        self.ask = ask
        self.say = say
    }

    /// Serves the window until a device is paired, its attempts are used or its time is up; returns once every
    /// exchange it began has ended.
    public func run() -> Outcome {
        guard let listener else { return .closed(attempts: 0) }
        let deadline = monotonicNowNs() + settings.windowNs
        while monotonicNowNs() < deadline, state.withLock({ $0.outcome == nil }) {
            // In slices, so a pairing made on another thread ends the wait at once.
            guard let c = listener.accept(timeoutNs: min(250_000_000, deadline - monotonicNowNs())) else { continue }
            let (ticket, eviction) = pending.admit(peer: c.peer) { [c] in c.shutdownNow() }
            if let e = eviction {
                note(
                    "evict",
                    "closed a connection from \(e.peer) that opened no pairing for \(PendingConnections.seconds(e.silentNs)), to make room"
                )
            }
            state.withLock {
                $0.open[ObjectIdentifier(c)] = c
                $0.threads += 1
            }
            Thread { [self] in
                serve(c, ticket: ticket, deadline: deadline)
                pending.ended(ticket)
                finished.lock()
                state.withLock {
                    $0.open[ObjectIdentifier(c)] = nil
                    $0.threads -= 1
                }
                finished.broadcast()
                finished.unlock()
            }.start()
        }
        // Closed: every exchange still open ends now (a device mid-exchange hears the connection close).
        let outcome = state.withLock { s -> Outcome in
            if s.outcome == nil { s.outcome = .closed(attempts: s.attempts) }
            for c in s.open.values { c.shutdownNow() }
            return s.outcome!
        }
        finished.lock()
        while state.withLock({ $0.threads }) > 0 { finished.wait() }
        finished.unlock()
        return outcome
    }

    /// The same exchange over one connection the host opened itself — to a device that advertised itself (`ppc-host
    /// pair --device`) — within the window's time and attempts: one way to pair, whoever connected.
    public func pair(over c: Connection) -> Outcome {
        serve(c, ticket: nil, deadline: monotonicNowNs() + settings.windowNs)
        return state.withLock { $0.outcome ?? .closed(attempts: $0.attempts) }
    }

    func note(_ kind: String, _ line: String) {
        if let shown = throttle.pass(kind, line) { say(shown) }
    }

    var isClosed: Bool { state.withLock { $0.outcome != nil } }

    func serve(_ c: Connection, ticket: PendingConnections.Ticket?, deadline: Int64) {
        guard (try? c.readPreamble(PairingProtocol.preamble.count)) == PairingProtocol.preamble else {
            note(
                "not-pairing",
                "\(c.peer) is not a pairing request (a device runs: ppc-tool pair HOST:\(listener?.port ?? 0)); closed")
            return
        }
        if let ticket { pending.settled(ticket) }
        var reachedCode = false
        do {
            let result = try PairingProtocol.pairAsHost(
                c, identity: identity, hostName: settings.hostName, serves: settings.serves,
                answerTimeoutNs: settings.answerTimeoutNs,
                admit: admit,
                confirm: { [self] code, id, fingerprint in
                    // One code before the person at a time; the next waits its turn (and a second after a failed one).
                    person.lock()
                    let turn = state.withLock { s -> Int? in
                        guard s.outcome == nil, s.attempts < settings.attempts, monotonicNowNs() < deadline else {
                            return nil
                        }
                        s.attempts += 1
                        return s.attempts
                    }
                    guard let turn else {
                        person.unlock()
                        return false
                    }
                    reachedCode = true
                    say(
                        "attempt \(turn) of \(settings.attempts): device '\(StandardStream.visible(id))' at \(c.peer) asks to pair (device key \(fingerprint))"
                    )
                    let yes = ask(code, id, c.peer, fingerprint, deadline)
                    person.unlock()
                    return yes
                })
            state.withLock { s in
                if s.outcome == nil { s.outcome = .paired(result, address: c.peer) }
            }
        } catch {
            if reachedCode {
                say("pairing with \(c.peer) failed: \(error)")
                let spent = state.withLock { $0.attempts >= settings.attempts }
                if spent {
                    state.withLock { s in if s.outcome == nil { s.outcome = .closed(attempts: s.attempts) } }
                } else {
                    person.lock()
                    sleepNs(1_000_000_000)  // at most one code a second: a relay guessing gets one in a million a try
                    person.unlock()
                }
            } else if !isClosed {
                note("refused", "\(c.peer): \(error)")
            }
        }
    }
}
