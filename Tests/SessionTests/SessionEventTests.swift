import FileSink
import Pipeline
import Synchronization
import TestSupport
import Testing

@testable import Session

/// A session says what happens as typed events (`SessionEvent`), which the stages record and an observer sees: what a
/// test asserts, instead of the words a progress line prints.
@Suite("Session events: what happened, typed, in the order it happened")
struct SessionEventTests {
    @Test func aSessionWarmsArmsHearsMintsAndDrainsInThatOrder() throws {
        let tmp = TemporaryDirectory("ppc-session-events")
        let events = Mutex<[SessionEvent]>([])
        let runner = try DeliveryTests.session(
            tmp.path, impacts: [1.0, 2.0], seconds: 3, sinks: [FileSink(directory: tmp.sub("clips"))],
            observe: { e in events.withLock { $0.append(e) } })
        #expect(runner.progress.state == .warming)
        let report = try runner.run()
        let seen = events.withLock { $0 }
        let states = seen.compactMap { if case .state(let s) = $0 { s } else { nil } }
        #expect(states == [.armed, .draining], "\(states)")
        let shots = seen.compactMap { if case .candidate(let c, true) = $0 { c.id } else { nil } }
        #expect(shots == [1, 2])
        let windows = seen.compactMap { if case .audioWindow(let id, let n, _) = $0 { (id, n) } else { nil } }
        #expect(windows.map(\.0) == [1, 2] && windows.allSatisfy { $0.1 > 0 })
        let minted = seen.compactMap { if case .minted(let clip, let shot) = $0 { (clip, shot) } else { nil } }
        #expect(minted.map(\.1) == [1, 2] && minted.map(\.0) == report.clips.map(\.clipID))
        let ended = seen.compactMap { if case .sourceEnded(let s) = $0 { s } else { nil } }
        #expect(Set(ended) == [.video, .audio])
        #expect(!seen.contains { if case .failed = $0 { true } else { false } })
        // The first fragment comes before the state is armed, and every shot before its clip.
        let firstFragment = seen.firstIndex { if case .fragment = $0 { true } else { false } }
        let armed = seen.firstIndex { if case .state(.armed) = $0 { true } else { false } }
        #expect(firstFragment != nil && armed != nil && firstFragment! < armed!)
        for id in [UInt64(1), 2] {
            let heard = seen.firstIndex { if case .candidate(let c, _) = $0 { c.id == id } else { false } }
            let clip = seen.firstIndex { if case .minted(_, let s) = $0 { s == id } else { false } }
            #expect(heard != nil && clip != nil && heard! < clip!)
        }
        #expect(runner.progress.state == .draining)
    }

    @Test func aStateSaysItselfAsTheProgressLineAndTheHostShowIt() {
        #expect(SessionState.interrupted(reason: "device lost").description == "interrupted: device lost")
        #expect([SessionState.warming, .armed, .draining].map(\.description) == ["warming", "armed", "draining"])
    }
}
