// Hot fix for demo 2.3: -[CheckoutViewController tableView:cellForRowAtIndexPath:] crashed
// with "index 3 beyond bounds [0 .. 2]" when the cart emptied while the list was on screen
// (the data source shrank before reloadData ran). Guard the index and log once.
require('UITableViewCell, NSIndexPath, HPLogger');

defineClass('CheckoutViewController', {
  tableView_cellForRowAtIndexPath: function(tableView, indexPath) {
    var items = self.cartItems();
    if (indexPath.row() >= items.count()) {
      HPLogger.log('hotpatch 2.3: cart row ' + indexPath.row() + ' of ' + items.count() + ' skipped');
      var cell = tableView.dequeueReusableCellWithIdentifier('EmptyCell');
      if (!cell) {
        cell = UITableViewCell.alloc().initWithStyle_reuseIdentifier(0, 'EmptyCell');
      }
      return cell;
    }
    return self.ORIGtableView_cellForRowAtIndexPath(tableView, indexPath);
  },

  tableView_numberOfRowsInSection: function(tableView, section) {
    return self.cartItems().count();
  }
});
