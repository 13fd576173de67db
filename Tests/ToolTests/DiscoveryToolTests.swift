import Foundation
import Glibc
import TestSupport
import Testing

/// DNS-SD for real: two network namespaces joined by a veth pair, each with its own D-Bus system bus and avahi-daemon
/// (`scripts/mdns-netns`). The device advertises itself and waits; the host discovers it, pairs with it over the
/// network (the person — this test — compares the codes), then the device's clip crosses to the host encrypted.
@Suite("Discovery: a device advertises, a host finds and pairs with it, across two network namespaces", .serialized)
struct DiscoveryToolTests {
    /// Why the test cannot run here, or nil: it needs root, iproute2, dbus-daemon and avahi-daemon.
    static var missing: String? {
        if getuid() != 0 { return "needs root (network namespaces)" }
        for tool in ["/usr/sbin/avahi-daemon", "/usr/bin/dbus-daemon", "/usr/bin/dbus-send"]
        where !FileManager.default.fileExists(atPath: tool) {
            return "\(tool) is missing (scripts/install-deps installs avahi-daemon and dbus)"
        }
        if (try? ToolRunner.runProgram("ip", ["netns", "list"]).status) != 0 {
            return "ip netns is not available (iproute2)"
        }
        return nil
    }

    struct Namespace {
        let name: String
        let bus: String
        let address: String
    }

    static func inside(_ ns: Namespace, _ tool: String, _ args: [String]) -> (String, [String]) {
        (
            "ip",
            ["netns", "exec", ns.name, "env", "DBUS_SYSTEM_BUS_ADDRESS=\(ns.bus)", ToolRunner.executable(tool)] + args
        )
    }

    static func start(_ program: (String, [String])) throws -> (Process, FileHandle, LineReader) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [program.0] + program.1
        let input = Pipe()
        let output = Pipe()
        p.standardInput = input
        p.standardOutput = output
        p.standardError = output
        try p.run()
        return (p, input.fileHandleForWriting, LineReader(output.fileHandleForReading))
    }

    @Test(.enabled(if: DiscoveryToolTests.missing == nil, "DNS-SD test skipped: \(DiscoveryToolTests.missing ?? "")"))
    func aDeviceAdvertisesTheHostDiscoversAndPairsWithItAndClipsCrossEncrypted() throws {
        let tmp = TemporaryDirectory("ppc-mdns")
        let tag = String(getpid() % 100_000)
        let script = ToolRunner.repoFile("scripts/mdns-netns")
        let up = try ToolRunner.runProgram("/bin/bash", [script, "up", tag, tmp.sub("mdns")])
        defer { _ = try? ToolRunner.runProgram("/bin/bash", [script, "down", tag, tmp.sub("mdns")]) }
        try #require(up.status == 0, "mdns-netns up: \(up.stderr)")
        let lines = String(decoding: up.stdout, as: UTF8.self).split(separator: "\n").map {
            $0.split(separator: " ").map(String.init)
        }
        let dev = Namespace(name: lines[0][1], bus: lines[0][2], address: lines[0][3])
        let hst = Namespace(name: lines[1][1], bus: lines[1][2], address: lines[1][3])

        // The device advertises and waits for a host.
        let (device, deviceIn, deviceLog) = try Self.start(
            Self.inside(
                dev, "ppc-tool",
                [
                    "pair", "--advertise", "--listen", "\(dev.address):0", "--device-id", "bay-n", "--state",
                    tmp.sub("dev-state"), "--timeout", "60",
                ]))
        defer { if device.isRunning { kill(device.processIdentifier, SIGKILL) } }
        #expect(deviceLog.await("advertising bay-n"), "\(deviceLog.text)")

        // The host sees it: its id and protocol version, and nothing of any policy.
        let seen = try ToolRunner.runProgram(
            "/usr/bin/env",
            [Self.inside(hst, "ppc-host", ["discover", "--json", "--seconds", "3"]).0]
                + Self.inside(hst, "ppc-host", ["discover", "--json", "--seconds", "3"]).1)
        let list = try #require(
            try JSONSerialization.jsonObject(with: seen.stdout) as? [[String: Any]], "\(seen.stderr)")
        let found = try #require(list.first { $0["deviceId"] as? String == "bay-n" }, "\(list)")
        #expect(found["address"] as? String == dev.address && found["protocol"] as? String == "1", "\(found)")

        // The host pairs with it; the person compares the codes and says yes on both.
        let serves = "\(hst.address):7600"
        let (host, hostIn, hostLog) = try Self.start(
            Self.inside(
                hst, "ppc-host",
                [
                    "pair", "--device", "bay-n", "--serves", serves, "--state", tmp.sub("host-state"), "--name",
                    "studio", "--window", "60",
                ]))
        #expect(hostLog.await("code: ") && deviceLog.await("code: "), "\(hostLog.text)\n\(deviceLog.text)")
        func code(_ r: LineReader) -> String {
            r.text.split(separator: "\n").first { $0.hasPrefix("code: ") }.map(String.init) ?? "?"
        }
        #expect(code(hostLog) == code(deviceLog))
        hostIn.write(Data("y\n".utf8))
        deviceIn.write(Data("y\n".utf8))
        host.waitUntilExit()
        device.waitUntilExit()
        #expect(host.terminationStatus == 0 && device.terminationStatus == 0, "\(hostLog.text)\n\(deviceLog.text)")
        #expect(deviceLog.text.contains("at \(serves)"), "\(deviceLog.text)")

        // Then the host serves, and the device's clip crosses the veth pair encrypted.
        let (server, _, serverLog) = try Self.start(
            Self.inside(
                hst, "ppc-host",
                [
                    "--listen", serves, "--library", tmp.sub("library"), "--state", tmp.sub("host-state"),
                    "--ingest-policy", "any",
                ]))
        defer {
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
        }
        #expect(serverLog.await("listening on"), "\(serverLog.text)")
        let run = Self.inside(
            dev, "ppc-tool",
            [
                "run", ToolRunner.fixture("manifests/to-host-secure.json"), "--out", tmp.sub("out"), "--host", serves,
                "--device-id", "bay-n",
                "--state", tmp.sub("dev-state"),
            ])
        let r = try ToolRunner.runProgram("/usr/bin/env", [run.0] + run.1)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(serverLog.await("accepted bay-n (bulk)"), "\(serverLog.text)")
        let clips = (try? FileManager.default.contentsOfDirectory(atPath: tmp.sub("library/bay-n"))) ?? []
        #expect(clips.contains { $0.hasPrefix("secure-") }, "\(clips)")
    }
}
