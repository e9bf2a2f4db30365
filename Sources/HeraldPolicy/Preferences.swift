/// A recipient's notification preferences (seed 004's `NotificationPreferences`).
public struct Preferences: Sendable, Hashable {
    /// The master switch.
    public var pushEnabled: Bool
    /// Explicit choices per category; a category not listed follows its default.
    public var categories: [String: Bool]
    public var quietHours: QuietHours?

    public init(pushEnabled: Bool = true, categories: [String: Bool] = [:], quietHours: QuietHours? = nil) {
        self.pushEnabled = pushEnabled
        self.categories = categories
        self.quietHours = quietHours
    }
}
