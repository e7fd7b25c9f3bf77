"""The synthetic long-memory corpus' vocabulary: the names, places and things its sessions (``bench.memory_corpus``)
and long assistant replies (``bench.memory_replies``) are filled from. A module of its own, below both."""

FIRST = ("Ana", "Tomás", "Priya", "Jonas", "Mei", "Kwame", "Sofia", "Mateo", "Aiko", "Lars", "Nadia", "Omar",
         "Chloe", "Ravi", "Ingrid", "Diego", "Leila", "Felix", "Yuki", "Marta", "Ibrahim", "Hannah", "Luca", "Zara",
         "Noah", "Amara", "Pavel", "Elena", "Kofi", "Greta", "Samir", "Iris", "Bruno", "Keiko", "Tariq", "Maya",
         "Oskar", "Lucía", "Dev", "Freya")  # fmt: skip
CITIES = ("Lisbon", "Porto", "Kyoto", "Oslo", "Lima", "Edinburgh", "Montreal", "Seville", "Ljubljana", "Tallinn",
          "Valencia", "Melbourne", "Vancouver", "Marrakesh", "Budapest", "Copenhagen", "Hanoi", "Cape Town",
          "Bologna", "Krakow", "Dublin", "Istanbul", "Buenos Aires", "Reykjavik", "Bergen", "Prague", "Nantes",
          "Granada", "Antwerp", "Salzburg", "Tbilisi", "Cusco", "Hobart", "Quebec City", "Naples", "Riga")  # fmt: skip
DISHES = ("shakshuka", "mushroom risotto", "chicken tikka masala", "a lentil soup", "beef bourguignon", "pad thai",
          "a vegetable lasagna", "fish tacos", "a Thai green curry", "banana bread", "carbonara", "ramen",
          "a shepherd's pie", "paella", "falafel wraps", "a tomato galette", "dumplings",
          "chili con carne")  # fmt: skip
INGREDIENTS = ("chickpeas", "spinach", "salmon", "tofu", "sweet potatoes", "mushrooms", "eggplant", "chicken thighs",
               "leeks", "cauliflower", "ground beef", "feta", "coconut milk", "butternut squash", "shrimp",
               "zucchini", "halloumi", "red lentils")  # fmt: skip
HERBS = ("basil", "cilantro", "thyme", "rosemary", "dill", "mint", "parsley", "tarragon", "oregano", "sage")
BOOKS = (("The Left Hand of Darkness", "Ursula K. Le Guin"), ("Piranesi", "Susanna Clarke"),
         ("The Remains of the Day", "Kazuo Ishiguro"), ("Middlemarch", "George Eliot"),
         ("Project Hail Mary", "Andy Weir"), ("The Overstory", "Richard Powers"),
         ("Pachinko", "Min Jin Lee"), ("Station Eleven", "Emily St. John Mandel"),
         ("The Name of the Rose", "Umberto Eco"), ("Beloved", "Toni Morrison"),
         ("A Gentleman in Moscow", "Amor Towles"), ("The Dispossessed", "Ursula K. Le Guin"),
         ("Klara and the Sun", "Kazuo Ishiguro"), ("The Goldfinch", "Donna Tartt"),
         ("Circe", "Madeline Miller"), ("The Road", "Cormac McCarthy"), ("Normal People", "Sally Rooney"),
         ("Hyperion", "Dan Simmons"), ("The Shadow of the Wind", "Carlos Ruiz Zafón"),
         ("Never Let Me Go", "Kazuo Ishiguro"), ("Tomorrow, and Tomorrow, and Tomorrow", "Gabrielle Zevin"),
         ("The Three-Body Problem", "Liu Cixin"), ("Anxious People", "Fredrik Backman"),
         ("The Secret History", "Donna Tartt"))  # fmt: skip
GENRES = ("science fiction", "historical fiction", "mysteries", "literary fiction", "fantasy", "memoirs",
          "popular science", "thrillers")  # fmt: skip
EXERCISES = ("squats", "deadlifts", "push-ups", "lunges", "kettlebell swings", "pull-ups", "planks", "burpees",
             "hip thrusts", "bench press", "rowing intervals", "box jumps")  # fmt: skip
PRODUCTS = ("noise-cancelling headphones", "a mechanical keyboard", "a rice cooker", "a winter jacket",
            "running shoes", "a 4K monitor", "an e-reader", "a cast-iron skillet", "a carry-on suitcase",
            "a smartwatch", "a desk lamp", "a blender", "a rain jacket", "a gaming chair", "a tent",
            "a portable speaker", "a coffee grinder", "wireless earbuds")  # fmt: skip
STORES = ("the outlet mall", "an online shop", "the department store downtown", "a second-hand shop",
          "the hardware store", "a small boutique", "the electronics store", "the weekend market")  # fmt: skip
PROG_LANGS = ("Python", "TypeScript", "Rust", "Go", "Kotlin", "Java", "C#", "Ruby", "Swift", "Elixir")
LIBS = ("pandas", "React", "Django", "FastAPI", "tokio", "Spring", "NumPy", "Flask", "SQLAlchemy", "Express",
        "Vue", "pytest")  # fmt: skip
BUGS = ("a KeyError", "a race condition", "a memory leak", "an off-by-one error", "CORS errors", "a deadlock",
        "a null pointer exception", "flaky tests", "a circular import", "a timezone bug", "slow queries",
        "a stack overflow")  # fmt: skip
SHOWS_FILMS = ("Dune", "Past Lives", "Oppenheimer", "Arrival", "Spirited Away", "The Grand Budapest Hotel",
               "Parasite", "Everything Everywhere All at Once", "Inside Out", "Perfect Days", "Aftersun",
               "The Lives of Others")  # fmt: skip
PLANTS = ("tomatoes", "basil", "a monstera", "succulents", "a fiddle-leaf fig", "strawberries", "lavender",
          "peppers", "an orchid", "a lemon tree", "courgettes", "snake plants")  # fmt: skip
REPAIRS = ("a leaking tap", "a squeaky door", "a running toilet", "a cracked tile", "a wobbly shelf",
           "a drafty window", "peeling paint", "a clogged drain", "a tripping breaker", "a stuck drawer")  # fmt: skip
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")  # fmt: skip
