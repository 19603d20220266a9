"""What the project knows about language, once, as data: the kinds of knowledge (and the kind of a sentence),
the categories of tools and the files a text names, the words of a text (one
tokenizer, one list of stop words), and the lexicon of lasting statements (the markers of a rule, a decision, a
cause, a replacement, a negation, a trait a person discloses). Every other package reads them from here; none
keeps a list of its own. The ground floor: it imports nothing of the project."""
