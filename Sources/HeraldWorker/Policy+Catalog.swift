import HeraldCatalog
import HeraldPolicy

extension Policy {
    /// Seed 004's defaults for the catalog's categories, with the catalog's `policies:` applied
    /// over them member by member.
    public init(catalog: Catalog) {
        var categories = Policy.defaults.categories
        for (name, rules) in catalog.settings.policies {
            var policy = categories[name] ?? .transactional
            if let always = rules.alwaysDelivered { policy.alwaysDelivered = always }
            if let enabled = rules.enabledByDefault { policy.enabledByDefault = enabled }
            switch rules.quietHours {
            case "defer": policy.quietHours = .defer
            case "drop": policy.quietHours = .drop
            case "ignore": policy.quietHours = .ignore
            default: break
            }
            if let throttle = rules.throttle {
                policy.throttle = throttle.map { rule in
                    let overLimit: ThrottleRule.OverLimit =
                        switch rule.overLimit {
                        case "drop": .drop
                        case "defer": .defer
                        default: .digest
                        }
                    return ThrottleRule(
                        name: rule.name,
                        limit: rule.limit,
                        window: .seconds(rule.windowSeconds),
                        overLimit: overLimit,
                        kind: rule.kind
                    )
                }
            }
            categories[name] = policy
        }
        self.init(categories: categories)
    }
}
