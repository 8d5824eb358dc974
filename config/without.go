package config

// WithoutS3 leaves the file's S3 sources out, with every resource that
// reads from one alone (a key pattern, or a plan without body that serves
// its row's object) and the object item of every other resource: what a
// server serves when it has no bucket to read objects from. Call it on a
// file that [Parse] accepted, before [File.Open].
func (f *File) WithoutS3() {
	s3 := map[string]bool{}
	sources := f.Sources[:0]
	for _, src := range f.Sources {
		if src.S3 != nil {
			s3[src.Name] = true
			continue
		}
		sources = append(sources, src)
	}
	f.Sources = sources
	resources := f.Resources[:0]
	for _, r := range f.Resources {
		if s3[r.Source] || r.Object != nil && s3[r.Object.Source] && r.Body == "" {
			continue // read from S3 alone, or a plan serving its object alone
		}
		resources = append(resources, r)
	}
	f.Resources = resources
}
