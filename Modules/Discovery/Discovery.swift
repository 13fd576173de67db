import CAvahi
import Dispatch
import Foundation

/// Why DNS-SD could not be used: no avahi-daemon reachable over the D-Bus system bus, a name collision, a timeout.
public struct DiscoveryError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ d: String) { description = d }
    init(_ what: String, code: Int32) { description = "\(what): \(String(cString: avahi_strerror(code)))" }
}

/// DNS-SD over mDNS through the system's avahi-daemon (libavahi-client; the only importer of CAvahi). ppc devices
/// advertise `_ppc._tcp` (REQ-DISC-1: the device is the advertiser) with TXT `id=<device id>` and `proto=1` — never a
/// policy number; a host browses for them.
public enum Discovery {
    public static let serviceType = "_ppc._tcp"

    /// One advertised device as a host resolved it.
    public struct Service: Sendable, Equatable {
        public let name: String
        public let hostName: String
        public let address: String
        public let port: Int
        public let txt: [String: String]
        public var deviceID: String? { txt["id"] }
    }

    /// A TXT record's strings as keys and values, as RFC 6763 §6 reads them: a key is everything before the first
    /// `=`, compared without case (kept here in lower case); a string without `=` is a key with no value (""); a string
    /// that starts with `=` has no key and is ignored; when a key comes twice, the first is the one. A value is taken as
    /// UTF-8, any invalid byte replaced (an id that is not plain is refused later, where it is used).
    public static func txtRecord(_ strings: [[UInt8]]) -> [String: String] {
        var pairs: [String: String] = [:]
        for entry in strings {
            let eq = entry.firstIndex(of: UInt8(ascii: "=")) ?? entry.endIndex
            guard eq > entry.startIndex else { continue }
            let key = String(decoding: entry[..<eq], as: UTF8.self).lowercased()
            guard pairs[key] == nil else { continue }
            pairs[key] = eq < entry.endIndex ? String(decoding: entry[(eq + 1)...], as: UTF8.self) : ""
        }
        return pairs
    }

    final class BrowseState {
        var found: [String: Service] = [:]
        var failure: String?
        var avahiClient: OpaquePointer?
    }

    /// Every `_ppc._tcp` service seen within `seconds` (IPv4), resolved to an address and port; sooner when `enough`
    /// says what has been seen will do (one named device: no need to wait out the whole window for it, and a longer
    /// window costs nothing when it answers at once).
    public static func browse(seconds: Double, until enough: ([Service]) -> Bool = { _ in false })
        throws(DiscoveryError) -> [Service]
    {
        guard let poll = avahi_simple_poll_new() else { throw DiscoveryError("cannot create an avahi poll") }
        defer { avahi_simple_poll_free(poll) }
        var error: Int32 = 0
        guard
            let client = avahi_client_new(avahi_simple_poll_get(poll), AvahiClientFlags(0), { _, _, _ in }, nil, &error)
        else {
            throw DiscoveryError("cannot reach avahi-daemon over the D-Bus system bus (is it running?)", code: error)
        }
        defer { avahi_client_free(client) }
        let state = BrowseState()
        state.avahiClient = client
        let context = Unmanaged.passRetained(state)
        defer { context.release() }
        guard
            let browser = avahi_service_browser_new(
                client, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_INET), serviceType, nil,
                AvahiLookupFlags(0),
                { _, interface, proto, event, name, type, domain, _, userdata in
                    let s = Unmanaged<BrowseState>.fromOpaque(userdata!).takeUnretainedValue()
                    switch event {
                    case AVAHI_BROWSER_NEW:
                        _ = avahi_service_resolver_new(
                            s.avahiClient, interface, proto, name, type, domain, AvahiProtocol(AVAHI_PROTO_INET),
                            AvahiLookupFlags(0),
                            { resolver, _, _, event, name, _, _, host, address, port, txt, _, userdata in
                                let s = Unmanaged<BrowseState>.fromOpaque(userdata!).takeUnretainedValue()
                                if event == AVAHI_RESOLVER_FOUND, let name, let address {
                                    var text = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
                                    avahi_address_snprint(&text, text.count, address)
                                    var entries: [[UInt8]] = []
                                    var item = txt
                                    while let i = item {
                                        entries.append(
                                            Array(
                                                UnsafeRawBufferPointer(
                                                    start: avahi_string_list_get_text(i),
                                                    count: avahi_string_list_get_size(i))))
                                        item = avahi_string_list_get_next(i)
                                    }
                                    let pairs = Discovery.txtRecord(entries)
                                    let service = Service(
                                        name: String(cString: name), hostName: host.map { String(cString: $0) } ?? "",
                                        address: String(
                                            decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) },
                                            as: UTF8.self), port: Int(port), txt: pairs)
                                    s.found[service.name] = service
                                }
                                avahi_service_resolver_free(resolver)
                            }, userdata)
                    case AVAHI_BROWSER_FAILURE:
                        s.failure = "browsing failed"
                    default: break
                    }
                }, context.toOpaque())
        else { throw DiscoveryError("cannot browse \(serviceType)", code: avahi_client_errno(client)) }
        defer { avahi_service_browser_free(browser) }
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
        while DispatchTime.now().uptimeNanoseconds < deadline, !enough(Array(state.found.values)) {
            if avahi_simple_poll_iterate(poll, 50) != 0 { break }
        }
        if let f = state.failure { throw DiscoveryError(f) }
        return state.found.values.sorted { $0.name < $1.name }
    }
}

/// A device's `_ppc._tcp` advertisement, published through avahi-daemon (its own event thread) until `stop()`.
public final class Advertisement: @unchecked Sendable {
    // @unchecked: the avahi objects are touched only before the poll thread starts and after it stops.
    final class GroupState {
        let settled = DispatchSemaphore(value: 0)
        var established = false
        var failure: String?
    }

    let poll: OpaquePointer
    let client: OpaquePointer
    let group: OpaquePointer
    let state: Unmanaged<GroupState>
    public let name: String
    public let port: Int

    /// Publishes `name` (the device id) on `port` with TXT `txt` (`key=value` strings); returns once the name is
    /// established on the network, or throws (no daemon, a name collision, no answer within 5 s).
    public init(name: String, port: Int, txt: [String]) throws(DiscoveryError) {
        guard let poll = avahi_threaded_poll_new() else { throw DiscoveryError("cannot create an avahi poll") }
        var error: Int32 = 0
        guard
            let client = avahi_client_new(
                avahi_threaded_poll_get(poll), AvahiClientFlags(0), { _, _, _ in }, nil, &error)
        else {
            avahi_threaded_poll_free(poll)
            throw DiscoveryError("cannot reach avahi-daemon over the D-Bus system bus (is it running?)", code: error)
        }
        let state = Unmanaged.passRetained(GroupState())
        guard
            let group = avahi_entry_group_new(
                client,
                { _, groupState, userdata in
                    let s = Unmanaged<GroupState>.fromOpaque(userdata!).takeUnretainedValue()
                    switch groupState {
                    case AVAHI_ENTRY_GROUP_ESTABLISHED:
                        s.established = true
                        s.settled.signal()
                    case AVAHI_ENTRY_GROUP_COLLISION:
                        s.failure = "another service on the network already has this name"
                        s.settled.signal()
                    case AVAHI_ENTRY_GROUP_FAILURE:
                        s.failure = "the advertisement failed"
                        s.settled.signal()
                    default: break
                    }
                }, state.toOpaque())
        else {
            let code = avahi_client_errno(client)
            avahi_client_free(client)
            avahi_threaded_poll_free(poll)
            state.release()
            throw DiscoveryError("cannot create an avahi entry group", code: code)
        }
        var list: UnsafeMutablePointer<AvahiStringList>? = nil
        for t in txt.reversed() { list = avahi_string_list_add(list, t) }
        defer { avahi_string_list_free(list) }
        var r = avahi_entry_group_add_service_strlst(
            group, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_INET), AvahiPublishFlags(0), name,
            Discovery.serviceType, nil, nil, UInt16(port), list)
        if r >= 0 { r = avahi_entry_group_commit(group) }
        self.poll = poll
        self.client = client
        self.group = group
        self.state = state
        self.name = name
        self.port = port
        guard r >= 0 else {
            stop()
            throw DiscoveryError("cannot publish \(name) as \(Discovery.serviceType)", code: r)
        }
        avahi_threaded_poll_start(poll)
        let s = state.takeUnretainedValue()
        if s.settled.wait(timeout: .now() + 5) == .timedOut {
            stop()
            throw DiscoveryError("avahi-daemon did not establish \(name) within 5 s")
        }
        if let f = s.failure {
            stop()
            throw DiscoveryError("\(name): \(f)")
        }
    }

    var stopped = false

    /// Withdraws the advertisement.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        avahi_threaded_poll_stop(poll)
        teardown()
    }

    func teardown() {
        avahi_entry_group_free(group)
        avahi_client_free(client)
        avahi_threaded_poll_free(poll)
        state.release()
    }

    deinit { stop() }
}
