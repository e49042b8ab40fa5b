package qr

// Modules is the width of o's code in modules, quiet zone included: the
// version's modules plus Margin on each side. A PNG whose Size is a multiple
// of it has modules of exactly Size/Modules pixels each; data-qr uses that
// for print (worker/render). Errors are Validate's.
func (o Options) Modules() (int, error) {
	p, err := o.plan(&apiFields)
	if err != nil {
		return 0, err
	}
	return p.modules + 2*o.Margin, nil
}
