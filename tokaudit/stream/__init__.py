"""Token streams for replay: readers (formats) and detokenizers (strategies)."""
