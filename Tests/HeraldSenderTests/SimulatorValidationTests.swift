import Testing

@testable import HeraldSimulator

@Suite("Provider simulator: request checks")
struct SimulatorValidationTests {
    @Test(
        "apns-id must be a UUID: 8-4-4-4-12 hexadecimal digits, either case",
        arguments: [
            ("123e4567-e89b-12d3-a456-426614174000", true),
            ("123E4567-E89B-12D3-A456-426614174000", true),
            ("123e4567-e89b-12d3-a456-42661417400", false),
            ("123e4567-e89b-12d3-a456-4266141740000", false),
            ("123e4567e-89b-12d3-a456-426614174000", false),
            ("123e4567-e89b-12d3-a456-42661417400g", false),
            ("123e4567-e89b-12d3-a456_426614174000", false),
            ("not-a-uuid", false),
            ("", false),
        ]
    )
    func apnsID(_ text: String, _ valid: Bool) {
        #expect(ProviderSimulator.isUUID(text) == valid)
    }
}
