import CLI
import Discovery
import Foundation
import Link
import Pairing
import Syscall

/// `ppc-tool pair HOST:PORT`: pairs this device with a host whose pairing window is open (`ppc-host pair`). Both show
/// the same six-digit code; the person compares them and confirms on both; only then does each pin the other's key.
enum PairCommand {
    static let command = Command(
        "pair",
        abstract:
            "Pair this device with a ppc-host (its pairing window open: ppc-host pair): compare the code, confirm.",
        discussion: """
            The device's identity (an X25519 key, created on first use) and the hosts it pinned live in --state DIR
            (default $XDG_STATE_HOME/ppc), 0600. A wrong or unconfirmed code pins nothing.
            """,
        options: [
            .value(
                "device-id", "id",
                help: "The name this device is paired as (default: the host name, else machine-<machine-id>)."),
            .value("state", "dir", help: "This device's identity and pinned hosts (default $XDG_STATE_HOME/ppc)."),
            .value(
                "timeout", "seconds",
                help: "How long to wait for the person's answer, or for a host when advertising (default 120)."),
            .flag(
                "advertise",
                help:
                    "Advertise this device over DNS-SD (_ppc._tcp) and wait for a host to pair with it (ppc-host pair --device ID)."
            ),
            .value(
                "listen", "host:port",
                help: "With --advertise: where the host reaches this device (default 0.0.0.0:0, any free port)."),
            .value(
                "moved", "old-host:port",
                help:
                    "The host this device is paired with now serves at HOST:PORT: it proves the key pinned under OLD-HOST:PORT by a handshake, and is pinned under the new address instead (no code to compare)."
            ),
        ],
        arguments: [
            Argument("host", optional: true, help: "HOST:PORT of the host's pairing window (not with --advertise).")
        ], run: pair)

    static func pair(_ inv: Invocation) throws -> ExitCode {
        let advertise = inv.flag("advertise")
        guard advertise != (inv.argument(0) != nil) else {
            throw CommandFailure.usage(
                "give either HOST:PORT (pair with a host's window) or --advertise (let a host find this device)")
        }
        let target = inv.argument(0) ?? ""
        let address = advertise ? nil : try Endpoint(target)
        if let old = inv.value("moved") {
            guard !advertise else {
                throw CommandFailure.usage("--moved takes the host's new HOST:PORT, not --advertise")
            }
            return try moved(from: old, to: target, inv)
        }
        let device = try deviceID(inv)
        let timeout = try inv.parsed("timeout", in: 1.0...3600.0) ?? 120
        let dir = StateDirectory.resolve(inv.value("state"), app: "ppc")
        let identity: Identity
        let hosts: PairedPeers
        do {
            let (id, created) = try Identity.loadOrCreate(dir)
            identity = id
            if created {
                Terminal.out("created this device's identity in \(dir)/identity.key (fingerprint \(id.fingerprint))")
            }
            hosts = try PairedPeers(directory: dir)
        } catch { throw CommandFailure.dataError("\(error)") }
        let c: Connection
        var advertisement: Advertisement?
        defer { advertisement?.stop() }
        if advertise {
            // The device is the advertiser (REQ-DISC-1): it listens, says so over DNS-SD, and the host connects.
            let listen = inv.value("listen") ?? "0.0.0.0:0"
            let endpoint = try Endpoint(listen, option: "listen", ports: 0...65535)
            let (lhost, lport) = (endpoint.host, endpoint.port)
            let listener: Listener
            do { listener = try Listener(host: lhost, port: lport) } catch { throw CommandFailure.failure("\(error)") }
            do {
                advertisement = try Advertisement(name: device, port: listener.port, txt: ["id=\(device)", "proto=1"])
            } catch { throw CommandFailure.failure("cannot advertise: \(error)") }
            Terminal.out(
                "advertising \(device) as \(Discovery.serviceType) on port \(listener.port); waiting for a host (ppc-host pair --device \(device))"
            )
            guard let accepted = listener.accept(timeoutNs: Int64(timeout * 1e9)) else {
                Terminal.err("ppc-tool pair: no host came within \(Int(timeout)) s; nothing pinned")
                return .failure
            }
            c = accepted
        } else {
            // given: not advertising, so HOST:PORT was checked above
            let (host, port) = (address?.host ?? "", address?.port ?? 0)
            do { c = try Connection.connect(host: host, port: port, channel: .control, attempts: 6) } catch {
                throw CommandFailure.failure("\(target): \(error)")
            }
        }
        do {
            let result = try PairingProtocol.pairAsDevice(c, identity: identity, deviceID: device) {
                code, hostName, fingerprint in
                Terminal.out(
                    "pairing \(device) with \(hostName)\(advertise ? "" : " at \(target)") (host key \(fingerprint))")
                Terminal.out("code: \(code)")
                return Terminal.ask("Does the host show the same code?", timeoutNs: Int64(timeout * 1e9))
            }
            // Pinned under the address the device will reach the host at: the one it dialled, or the one the host said.
            guard let address = advertise ? result.peerAddress : target else {
                throw PairingError("the host did not say where it serves devices: nothing pinned")
            }
            try hosts.pin(name: address, key: result.peerKey)
            Terminal.out(
                "paired: \(device) ↔ \(result.peerName) at \(address) (host key \(KeyText.fingerprint(result.peerKey))); pinned in \(hosts.path)"
            )
            return .success
        } catch {
            Terminal.err("ppc-tool pair: \(error)")
            return .failure
        }
    }

    /// `pair NEW --moved OLD`: a host that moved (a new address from DHCP, another port). The key pinned under OLD is
    /// offered to whatever serves at NEW in the link's own handshake, which only the holder of that key's secret can
    /// complete; then the pin moves to NEW. Nothing is pinned when the handshake fails, and no key is ever taken from
    /// the network: only one this device already trusts.
    static func moved(from old: String, to new: String, _ inv: Invocation) throws -> ExitCode {
        _ = try Endpoint(old, option: "moved")
        let endpoint = try Endpoint(new)
        let (host, port) = (endpoint.host, endpoint.port)
        let dir = StateDirectory.resolve(inv.value("state"), app: "ppc")
        let hosts: PairedPeers
        do { hosts = try PairedPeers(directory: dir) } catch { throw CommandFailure.dataError("\(error)") }
        guard let key = hosts.key(for: old) else {
            let known = hosts.all.map(\.name).sorted()
            throw CommandFailure.failure(
                "this device is not paired with \(old) (state \(dir); paired with \(known.isEmpty ? "no host" : known.joined(separator: ", "))): nothing to move"
            )
        }
        if let why = hosts.conflict(name: new, key: key) { throw CommandFailure.failure("\(why); nothing moved") }
        let identity: Identity
        do { identity = try Identity.loadOrCreate(dir).0 } catch { throw CommandFailure.dataError("\(error)") }
        do {
            let c = try Connection.connect(host: host, port: port, channel: .control, attempts: 3)
            try c.secure(as: DeviceSecurity(identity: identity.keys, hostKey: key), channel: .control)
            try? c.send(.bye(reason: "pairing moved"))
        } catch {
            throw CommandFailure.failure(
                "\(new) did not prove the key paired as \(old) (\(KeyText.fingerprint(key))): \(error); nothing pinned")
        }
        do {
            try hosts.pin(name: new, key: key)
            if new != old { _ = try hosts.unpin(old) }
        } catch { throw CommandFailure.dataError("\(error)") }
        Terminal.out(
            "moved: the host paired as \(old) serves at \(new) and proved its key (\(KeyText.fingerprint(key))); pinned under \(new) in \(hosts.path)"
        )
        return .success
    }
}
