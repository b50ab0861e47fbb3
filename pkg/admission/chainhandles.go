package admission

// Handles reports whether any plugin in c handles op, so that a Chain is
// itself a ValidationInterface and can be served wherever one plugin can.
func (c Chain) Handles(op Operation) bool {
	for _, p := range c {
		if p.Handles(op) {
			return true
		}
	}
	return false
}

var _ ValidationInterface = Chain(nil)
