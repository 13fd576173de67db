import Crypto
import Foundation
import JSONInput
import Link
import Syscall

/// Why a state directory's identity or pairings cannot be used.
public struct PairingError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A long-term X25519 identity: created on first use, kept in `DIR/identity.key` (0600, in a 0700 directory), never
/// logged — only its fingerprint is ever shown.
public struct Identity: Sendable {
    public let keys: KeyPair
    public var fingerprint: String { KeyText.fingerprint(keys.publicKey) }
    static let header = "ppc-identity-1"

    /// The identity in `directory`, created there if it has none. A key file others may read is refused, not used.
    public static func loadOrCreate(_ directory: String) throws(PairingError) -> (identity: Identity, created: Bool) {
        let path = directory + "/identity.key"
        if let text = try SecretFile.read(path, remedy: "chmod 600 it, or remove it and pair again") {
            let lines = text.split(separator: "\n").map(String.init)
            guard lines.count >= 2, lines[0] == header, let secret = KeyText.bytes(hex: lines[1]),
                let keys = KeyPair(secretKey: secret)
            else {
                throw PairingError("\(path) is not a ppc identity (expected '\(header)' and 64 hex digits)")
            }
            return (Identity(keys: keys), false)
        }
        let keys = KeyPair.generate()
        try SecretFile.create(path, in: directory, text: "\(header)\n\(KeyText.hex(keys.secretKey))\n")
        return (Identity(keys: keys), true)
    }
}

/// A secret a person carries in a link — the studio's access key, served beyond loopback: 32 random bytes as 64 hex
/// digits in `DIR/studio.key` (0600, like the identity), made once and kept, so a bookmarked link goes on working.
/// Removing the file and restarting makes a new one (every link given out stops working).
public enum AccessKey {
    static let header = "ppc-studio-key-1"

    public static func loadOrCreate(_ directory: String) throws(PairingError) -> (
        key: String, path: String, created: Bool
    ) {
        let path = directory + "/studio.key"
        if let text = try SecretFile.read(path, remedy: "chmod 600 it, or remove it to make a new key") {
            let lines = text.split(separator: "\n").map(String.init)
            guard lines.count >= 2, lines[0] == header, lines[1].count == 64, KeyText.bytes(hex: lines[1]) != nil else {
                throw PairingError("\(path) is not a studio key (expected '\(header)' and 64 hex digits)")
            }
            return (lines[1], path, false)
        }
        let key = KeyText.hex(Crypto.random(32))
        try SecretFile.create(path, in: directory, text: "\(header)\n\(key)\n")
        return (key, path, true)
    }
}

/// A secret's file: 0600 in a 0700 directory, created before a byte is written (never briefly readable by others) and
/// renamed into place; one others may read is refused, not used.
enum SecretFile {
    /// The file's text, or nil when there is none.
    static func read(_ path: String, remedy: String) throws(PairingError) -> String? {
        let fm = FileManager.default
        guard fm.fileExists(atPath: path) else { return nil }
        guard let attrs = try? fm.attributesOfItem(atPath: path),
            let mode = (attrs[.posixPermissions] as? NSNumber)?.intValue
        else {
            throw PairingError("\(path): cannot read its permissions")
        }
        guard mode & 0o077 == 0 else {
            throw PairingError(
                "\(path) is readable by others (mode \(String(mode, radix: 8))): a secret key must be 0600 — \(remedy)")
        }
        guard let text = fm.contents(atPath: path).map({ String(decoding: $0, as: UTF8.self) }) else {
            throw PairingError("\(path): cannot read it")
        }
        return text
    }

    static func create(_ path: String, in directory: String, text: String) throws(PairingError) {
        let fm = FileManager.default
        do {
            try fm.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch { throw PairingError("\(directory): cannot create the state directory: \(error.localizedDescription)") }
        let tmp = path + ".tmp"
        guard fm.createFile(atPath: tmp, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw PairingError("\(tmp): cannot write")
        }
        do { try FileSystem.rename(tmp, path) } catch { throw PairingError("\(path): \(error)") }
    }
}

/// One side's pinned peers (`DIR/paired.json`, 0600): a host's devices by device id, a device's hosts by `HOST:PORT`.
/// Each is bound to the public key confirmed at pairing; a name is never rebound to another key without unpairing.
public final class PairedPeers: @unchecked Sendable {
    // @unchecked: every access holds `lock`.
    public struct Peer: Codable, Sendable, Equatable {
        public var name: String
        public var publicKey: String
        public var pairedAt: String
        public var fingerprint: String
    }

    public let path: String
    let lock = NSLock()
    var peers: [Peer]

    /// The pairings in `directory` (none yet is an empty list; a file that is not one is refused, naming it).
    public init(directory: String) throws(PairingError) {
        path = directory + "/paired.json"
        guard FileSystem.exists(path) else {
            peers = []
            return
        }
        let data: Data
        do { data = Data(try FileSystem.readSmallFile(path, limit: 4 << 20, regularFileOnly: true)) } catch {
            throw PairingError("\(path): cannot read (\(error))")
        }
        guard let list = try? JSONInput.decode([Peer].self, from: data),
            list.allSatisfy({ KeyText.bytes(hex: $0.publicKey) != nil })
        else {
            throw PairingError(
                "\(path) is not a list of pairings (name, 64-hex-digit publicKey, pairedAt, fingerprint)")
        }
        peers = list
    }

    public var all: [Peer] {
        lock.lock()
        defer { lock.unlock() }
        return peers
    }

    /// The name a key was paired as.
    public func name(for key: [UInt8]) -> String? {
        let hex = KeyText.hex(key)
        lock.lock()
        defer { lock.unlock() }
        return peers.first { $0.publicKey == hex }?.name
    }

    /// The key `name` was paired with.
    public func key(for name: String) -> [UInt8]? {
        lock.lock()
        defer { lock.unlock() }
        return peers.first { $0.name == name }.flatMap { KeyText.bytes(hex: $0.publicKey) }
    }

    /// Why `name` cannot be paired with `key` here (taken by another key), or nil.
    public func conflict(name: String, key: [UInt8]) -> String? {
        lock.lock()
        defer { lock.unlock() }
        if let p = peers.first(where: { $0.name == name }), p.publicKey != KeyText.hex(key) {
            return "'\(name)' is already paired here with another key (\(p.fingerprint)); unpair it first"
        }
        return nil
    }

    /// Pins `key` as `name` (replacing only the same name's same key) and saves.
    public func pin(name: String, key: [UInt8]) throws(PairingError) {
        if let why = conflict(name: name, key: key) { throw PairingError(why) }
        lock.lock()
        peers.removeAll { $0.name == name }
        peers.append(
            Peer(
                name: name, publicKey: KeyText.hex(key), pairedAt: ISO8601DateFormatter().string(from: Date()),
                fingerprint: KeyText.fingerprint(key)))
        let snapshot = peers
        lock.unlock()
        try save(snapshot)
    }

    /// Forgets `name`; false when it was not paired.
    public func unpin(_ name: String) throws(PairingError) -> Bool {
        lock.lock()
        let before = peers.count
        peers.removeAll { $0.name == name }
        let removed = peers.count != before
        let snapshot = peers
        lock.unlock()
        if removed { try save(snapshot) }
        return removed
    }

    func save(_ list: [Peer]) throws(PairingError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(list) else { throw PairingError("cannot encode pairings") }
        let tmp = path + ".tmp"
        guard FileManager.default.createFile(atPath: tmp, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw PairingError("\(tmp): cannot write")
        }
        do { try FileSystem.rename(tmp, path) } catch { throw PairingError("\(path): \(error)") }
    }
}

/// How a device reaches a host: encrypted with the keys pinned at pairing, or (benches and tests only) in plaintext
/// to a loopback address.
public enum DeviceLinkSecurity {
    /// Whether `host` is a loopback address (127.0.0.0/8 or localhost): the only place plaintext is allowed.
    public static func isLoopback(_ host: String) -> Bool { host == "localhost" || host.hasPrefix("127.") }

    /// The security for `host:port`: this device's identity (from `stateDirectory`, default the XDG state dir) and the
    /// host key it pinned there; nil when `insecureLoopbackOnly` and the host is a loopback address. Throws, saying
    /// what to do, when the device is not paired with that host, or plaintext was asked for a non-loopback address.
    public static func resolve(host: String, port: Int, stateDirectory: String?, insecureLoopbackOnly: Bool)
        throws(PairingError) -> DeviceSecurity?
    {
        if insecureLoopbackOnly {
            guard isLoopback(host) else {
                throw PairingError(
                    "insecureLoopbackOnly: \(host) is not a loopback address; plaintext never crosses a network — pair with the host instead"
                )
            }
            return nil
        }
        let dir = StateDirectory.resolve(stateDirectory, app: "ppc")
        let (identity, _) = try Identity.loadOrCreate(dir)
        let hosts = try PairedPeers(directory: dir)
        guard let key = hosts.key(for: "\(host):\(port)") else {
            let known = hosts.all.map(\.name).sorted()
            let moved =
                known.isEmpty
                ? ""
                : "; if it is a host this device is paired with (\(known.joined(separator: ", "))) at a new address, ppc-tool pair \(host):\(port) --moved OLD-HOST:PORT proves its key and re-pins it"
            throw PairingError(
                "not paired with \(host):\(port) (state \(dir)): pair first — ppc-host pair on the host, then ppc-tool pair \(host):\(port) here\(moved)"
            )
        }
        return DeviceSecurity(identity: identity.keys, hostKey: key)
    }
}
