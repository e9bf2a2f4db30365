public enum HeraldAppPlaceholder {}
