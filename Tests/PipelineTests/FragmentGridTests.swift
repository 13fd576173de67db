import Testing

@testable import Pipeline

/// Where fragments open: on the grid by frame time, and at the cuts a session asks for (a shot's post-roll end).
@Suite("FragmentGrid: boundaries by time, and cuts at a post-roll's end")
struct FragmentGridTests {
    static let interval: Int64 = 8_333_333  // 120 fps

    /// The frames (by index) that open a fragment, over `frames` frames at 120 fps.
    static func openings(_ grid: inout FragmentGrid, frames: Int, during: (Int) -> Void = { _ in }) -> [Int] {
        var opened: [Int] = []
        for i in 0..<frames {
            during(i)
            if grid.place(Int64(i) * interval).opens { opened.append(i) }
        }
        return opened
    }

    @Test func withoutCutsFragmentsOpenOnTheGridAndADroppedFrameShiftsNothing() {
        var grid = FragmentGrid(fragmentNs: 500_000_000, frameIntervalNs: Self.interval)
        #expect(Self.openings(&grid, frames: 240) == [0, 60, 120, 180])
        // Frame 60 never came: 61 opens the fragment, 120 the next, as if it had.
        var gappy = FragmentGrid(fragmentNs: 500_000_000, frameIntervalNs: Self.interval)
        var opened: [Int] = []
        for i in 0..<180 where i != 60 {
            if gappy.place(Int64(i) * Self.interval).opens { opened.append(i) }
        }
        #expect(opened == [0, 61, 120])
    }

    @Test func aCutOpensAFragmentAtTheFirstFrameAtOrAfterItAndTheGridCountsOnFromThere() {
        let cuts = FragmentCuts()
        var grid = FragmentGrid(fragmentNs: 500_000_000, frameIntervalNs: Self.interval, cuts: cuts)
        // 1.104 s falls between frame 132 (1.0999 s) and 133 (1.1083 s): 133 opens a fragment, and the grid's next
        // lines are 60 frames on from it, not at 180.
        #expect(cuts.request(atNs: 1_104_000_000))
        #expect(Self.openings(&grid, frames: 300) == [0, 60, 120, 133, 193, 253])
        #expect(cuts.made == 1 && cuts.missed == 0)
    }

    @Test func aCutOnAFrameIsThatFrameAndOneAskedDuringCaptureIsMadeWhenItsTimeComes() {
        let cuts = FragmentCuts()
        var grid = FragmentGrid(fragmentNs: 500_000_000, frameIntervalNs: Self.interval, cuts: cuts)
        // Asked for while frame 20 is being placed (as a shot is heard during capture), for frame 90's exact time.
        let opened = Self.openings(&grid, frames: 200) { i in
            if i == 20 { cuts.request(atNs: 90 * Self.interval) }
        }
        #expect(opened == [0, 60, 90, 150])
        #expect(cuts.made == 1)
    }

    @Test func aCutAlreadyPastOrAtTheFirstFrameIsLetGoAndCountedNotMade() {
        let cuts = FragmentCuts()
        var grid = FragmentGrid(fragmentNs: 500_000_000, frameIntervalNs: Self.interval, cuts: cuts)
        cuts.request(atNs: 0)  // the first frame opens a fragment anyway
        let opened = Self.openings(&grid, frames: 130) { i in
            if i == 100 { cuts.request(atNs: 50 * Self.interval) }  // asked for after its frame was placed
        }
        #expect(opened == [0, 60, 120])
        #expect(cuts.made == 0 && cuts.missed == 2)
    }

    /// A detector reading a file hears every shot long before the picture reaches it: all the cuts wait, in time order.
    @Test func cutsAskedForOutOfOrderAndLongAheadAreEachMadeAndTwoInOneFrameMakeOneFragment() {
        let cuts = FragmentCuts()
        var grid = FragmentGrid(fragmentNs: 500_000_000, frameIntervalNs: Self.interval, cuts: cuts)
        for frame: Int64 in [45, 30, 10, 200, 130] { #expect(cuts.request(atNs: frame * Self.interval)) }
        #expect(cuts.request(atNs: 10 * Self.interval - 1))  // the same frame as 10: one fragment
        #expect(!cuts.request(atNs: .min) && !cuts.request(atNs: .max))
        #expect(Self.openings(&grid, frames: 240) == [0, 10, 30, 45, 105, 130, 190, 200])
        #expect(cuts.made == 5 && cuts.missed == 2)
    }

    @Test func pastItsCapacityACutIsNotKept() {
        let cuts = FragmentCuts()
        for i in 0..<FragmentCuts.capacity { #expect(cuts.request(atNs: Int64(i + 1) * 1_000_000_000)) }
        #expect(!cuts.request(atNs: 1))
        #expect(cuts.missed == 1)
    }

    /// A relayed shot the device then heard itself gives its cut back (its own shot asks for one a few ms away); the
    /// cuts still waiting when capture ends are counted as not made.
    @Test func aCutCanBeWithdrawnAndThoseLeftAtTheEndAreCountedNotMade() {
        let cuts = FragmentCuts()
        var grid = FragmentGrid(fragmentNs: 500_000_000, frameIntervalNs: Self.interval, cuts: cuts)
        cuts.request(atNs: 30 * Self.interval)
        cuts.request(atNs: 31 * Self.interval)
        cuts.request(atNs: 500 * Self.interval)
        #expect(cuts.cancel(atNs: 31 * Self.interval) && !cuts.cancel(atNs: 32 * Self.interval))
        #expect(Self.openings(&grid, frames: 100) == [0, 30, 90])
        #expect(cuts.abandon() == 1)
        #expect(cuts.made == 1 && cuts.missed == 1)
    }
}
