import Testing

@testable import Raster

@Suite struct RasterTests {
    @Test func aLineIsDrawnWhereItGoesAndNowhereElse() throws {
        let r = try Raster(width: 64, height: 32)
        r.stroke([(x: 4, y: 16), (x: 60, y: 16)], color: Raster.Color(hex: "#ff0000")!, lineWidth: 4)
        let on = r.pixel(x: 32, y: 16)
        #expect(on == (255, 0, 0, 255))
        let off = r.pixel(x: 32, y: 4)
        #expect(off.alpha == 0)
    }

    @Test func textAndCirclesLeavePixels() throws {
        let r = try Raster(width: 200, height: 60)
        r.text(
            "IMPACT", x: 10, y: 40, size: 30, color: .init(red: 1, green: 1, blue: 1),
            outline: .init(red: 0, green: 0, blue: 0))
        var inked = 0
        for y in 0..<60 { for x in 0..<200 where r.pixel(x: x, y: y).alpha > 0 { inked += 1 } }
        #expect(inked > 200)
        r.circle(x: 150, y: 30, radius: 10, color: .init(red: 0, green: 0, blue: 1), lineWidth: 0)
        #expect(r.pixel(x: 150, y: 30) == (0, 0, 255, 255))
    }

    @Test func aColourIsReadFromTheStudiosHexOrRefused() {
        #expect(Raster.Color(hex: "#00ff80") == Raster.Color(red: 0, green: 1, blue: 128.0 / 255))
        #expect(Raster.Color(hex: "00ff80") == nil)
        #expect(Raster.Color(hex: "#00ff8") == nil)
        #expect(Raster.Color(hex: "#zzzzzz") == nil)
    }

    @Test func aPictureTooLargeIsRefusedNamingItsSize() {
        #expect(throws: Raster.RasterError.self) { try Raster(width: 100_000, height: 10) }
        #expect(throws: Raster.RasterError.self) { try Raster(width: 0, height: 10) }
    }
}
